"""A faster numba IR inliner for ``inline="always"`` helpers: the same code, compiled in about half
the time. Applied by ``import engine`` (engine/_jitcache.py) only when numba is exactly the version
below and the two patched methods' source is exactly the one this was written against; otherwise
numba is left as it is (the kernels are the same, they only take longer to compile). Set
JOINTLAB_NUMBA_PATCH=0 to leave numba alone. ``tests/test_inliner.py`` compiles kernels with and
without the patch in two processes and compares the LLVM IR they produce (identical up to the names
of variables).

Upstream report (for numba's issue tracker)
-------------------------------------------
**InlineWorker copies the callee's IR once per block per call site and re-runs its untyped pipeline
at every call site: inline="always" costs quadratic time.**

``numba.core.inline_closurecall.InlineWorker.inline_ir`` (numba 0.68.1, lines ~381-393) copies the
callee's IR with ::

    for block_label, block in the_ir.blocks.items():
        new_block = copy.deepcopy(the_ir.blocks[block_label])

Each ``deepcopy`` gets a fresh memo, and every block refers to the function's ``Scope``, whose
``localvars`` holds every variable of the function: the whole variable table is deep-copied once per
block (O(blocks x variables) instead of O(statements)). ``inline_ir`` then makes a second such copy,
``callee_ir_original``, which both callers inside numba (``InlineInlinables._do_work`` and the typed
overload inliner) discard. And ``inline_function`` runs the callee's whole untyped pipeline again at
every call site (``run_untyped_passes``), nested inlining included, although its result depends only on
the function, the flags, the locals and the contexts, and ``inline_ir`` copies it before mutating it.

Measured on JointLab (86 helpers with inline="always", 757 inlined call sites; numba 0.68.1, 2-core
x86-64): the window's kernels compile in 118 s of CPU instead of 247 s. The code produced is the
same: the LLVM IR of every kernel compared is identical once variable names are normalised.

The fix (this module): one deep copy of all blocks with one shared memo; no second copy (the first
tuple element returned is None; numba's callers ignore it); the callee's untyped IR memoised per
(function, flags, locals, contexts) and copied at each use as before.
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import os

import numba
from numba.core import inline_closurecall as icc

NUMBA_VERSION = "0.68.1"
# sha256 (first 16 hex digits) of inspect.getsource of the methods replaced below, as shipped by
# NUMBA_VERSION: a numba whose methods differ in any character is not patched
SOURCE_HASHES = {"inline_ir": "26fd2b7600c9d929", "inline_function": "1b53f183258e659d"}

_ORIGINAL = {"inline_ir": icc.InlineWorker.inline_ir, "inline_function": icc.InlineWorker.inline_function}
_MEMO = {}          # (function, flags, locals, contexts) -> the callee's untyped IR (never mutated)
_applied = False


def _source_hash(fn):
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def why_not():
    """None when the patch applies to this numba; otherwise the reason it does not."""
    if os.environ.get("JOINTLAB_NUMBA_PATCH", "1") == "0":
        return "JOINTLAB_NUMBA_PATCH=0"
    if numba.__version__ != NUMBA_VERSION:
        return f"numba {numba.__version__} (the patch is for {NUMBA_VERSION})"
    for name, fn in _ORIGINAL.items():
        try:
            h = _source_hash(fn)
        except (OSError, TypeError):
            return f"the source of InlineWorker.{name} is not available"
        if h != SOURCE_HASHES[name]:
            return f"InlineWorker.{name} differs from the version the patch was written against"
    return None


def applied():
    return _applied


def apply():
    """Install the faster inliner when why_not() is None. Returns True when it is installed."""
    global _applied
    if _applied:
        return True
    if why_not() is not None:
        return False
    icc.InlineWorker.inline_ir = _inline_ir
    icc.InlineWorker.inline_function = _inline_function
    _applied = True
    return True


def _copy_ir(the_ir):
    """The callee's IR with every block deep-copied under one memo: the scope and its variables
    are copied once, not once per block (numba's copy_ir)."""
    kernel_copy = the_ir.copy()
    kernel_copy.blocks = copy.deepcopy(the_ir.blocks)
    return kernel_copy


def _inline_function(self, caller_ir, block, i, function, arg_typs=None):
    """numba's inline_function, with the callee's untyped IR computed once per (function, flags,
    locals, contexts) instead of at every call site."""
    key = (function, repr(self.flags), repr(sorted(self.locals.items())) if self.locals else "",
           id(self.typingctx), id(self.targetctx))
    callee_ir = _MEMO.get(key)
    if callee_ir is None:
        callee_ir = self.run_untyped_passes(function)
        _MEMO[key] = callee_ir
    else:
        self.flags.enable_ssa = False     # what run_untyped_passes leaves in the shared flags
    freevars = function.__code__.co_freevars
    return self.inline_ir(caller_ir, block, i, callee_ir, freevars, arg_typs=arg_typs)


def _inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs=None):
    """numba's InlineWorker.inline_ir (0.68.1) with _copy_ir and without the unmutated second copy
    (returned as None: numba's callers discard it). Every other line is numba's, but for its debug
    prints (config.DEBUG_INLINE_CLOSURE)."""
    from numba.core import ir, ir_utils
    from numba.core.ir_utils import (add_offset_to_labels, simplify_CFG, replace_vars,
                                     find_topo_order, next_label)

    callee_ir = _copy_ir(callee_ir)
    if self.validator is not None:
        self.validator(callee_ir)
    scope = block.scope
    instr = block.body[i]
    call_expr = instr.value
    callee_blocks = callee_ir.blocks

    # 1. relabel callee_ir by adding an offset
    max_label = max(ir_utils._the_max_label.next(), max(caller_ir.blocks.keys()))
    callee_blocks = add_offset_to_labels(callee_blocks, max_label + 1)
    callee_blocks = simplify_CFG(callee_blocks)
    callee_ir.blocks = callee_blocks
    min_label = min(callee_blocks.keys())
    max_label = max(callee_blocks.keys())
    ir_utils._the_max_label.update(max_label)

    # 2. rename all local variables in callee_ir with new locals created in caller_ir
    callee_scopes = icc._get_all_scopes(callee_blocks)
    assert len(callee_scopes) == 1
    callee_scope = callee_scopes[0]
    var_dict = {}
    for var in tuple(callee_scope.localvars._con.values()):
        if not (var.name in callee_freevars):
            inlined_name = icc._created_inlined_var_name(callee_ir.func_id.unique_name, var.name)
            new_var = scope.redefine(inlined_name, loc=var.loc)
            callee_scope.redefine(inlined_name, loc=var.loc)
            var_dict[var.name] = new_var
    replace_vars(callee_blocks, var_dict)

    # 3. replace formal parameters with actual arguments
    callee_func = callee_ir.func_id.func
    args = icc._get_callee_args(call_expr, callee_func, block.body[i].loc, caller_ir)

    # 4. update typemap
    if self._permit_update_type_and_call_maps:
        if arg_typs is None:
            raise TypeError('arg_typs should have a value not None')
        self.update_type_and_call_maps(callee_ir, arg_typs)
        callee_blocks = callee_ir.blocks
    icc._replace_args_with(callee_blocks, args)

    # 5. split caller blocks into two
    new_blocks = []
    new_block = ir.Block(scope, block.loc)
    new_block.body = block.body[i + 1:]
    new_label = next_label()
    caller_ir.blocks[new_label] = new_block
    new_blocks.append((new_label, new_block))
    block.body = block.body[:i]
    block.body.append(ir.Jump(min_label, instr.loc))

    # 6. replace Return with assignment to LHS
    topo_order = find_topo_order(callee_blocks)
    icc._replace_returns(callee_blocks, instr.target, new_label)
    if (instr.target.name in caller_ir._definitions
            and call_expr in caller_ir._definitions[instr.target.name]):
        caller_ir._definitions[instr.target.name].remove(call_expr)

    # 7. insert all new blocks, and add back definitions
    for label in topo_order:
        block = callee_blocks[label]
        block.scope = scope
        icc._add_definitions(caller_ir, block)
        caller_ir.blocks[label] = block
        new_blocks.append((label, block))
    return None, callee_blocks, var_dict, new_blocks
