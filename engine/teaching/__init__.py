"""What the teaching views show: every quantity of Kim's tables step by step (trace) and the equation of motion term by term (equation)."""
