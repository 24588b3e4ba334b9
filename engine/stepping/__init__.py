"""Time stepping without contact: the compiled step loop (``steploop``), its buffers and call
(``driver``), a simulator's use of it (``compiled``), the Python reference step (``python_step``),
the inputs (``inputs``: laws or a callback; ``input_laws``: the compiled laws)."""
