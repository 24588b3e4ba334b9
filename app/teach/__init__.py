"""The teaching views: Inspector, Equation view, step-through, overlay, lesson notes and panel, derivative tools."""
