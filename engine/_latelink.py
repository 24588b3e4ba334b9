"""Large callees linked after the caller's optimisation, not optimised again inside every caller.

numba compiles each kernel into its own LLVM module, optimises it, and links the modules of the
kernels it calls into it (``CPUCodeLibrary.finalize``): the callees' functions arrive already
optimised and are optimised again, whole, with the caller, at every level of a call chain. The
contact step sits at the end of a chain nine deep (gjk -> gjk_epa -> pair_distance -> _ordered ->
pair_manifold -> pair_contacts -> _pairs -> contact_step -> contact_advance), so GJK's code was
optimised nine times. Measured on the warm-up's contact task (numba 0.68.1, 2-core x86-64): LLVM's
module passes 79 s of its 261 s CPU, 23 s of them re-optimising contact_step and everything under
it inside contact_advance.

This patch links a callee's module after the caller's module passes when the functions the caller
calls from it are large (over LARGE instructions): LLVM's inliner would not inline those (its
threshold at -O3 is 250), so optimising them again could only change them by the interprocedural
passes that see their bodies, and they keep the optimisation they had. Smaller callees are linked
before, as numba does, and inlined where LLVM chooses. A global dead-code pass after the late links
drops what the caller does not reach (the callees' own Python wrappers), as numba's module passes did.
Measured: the contact task's module passes 79 -> 41 s CPU.

Applied by ``import engine`` only when numba is exactly NUMBA_VERSION and ``CPUCodeLibrary.finalize``
is exactly the source it was written against; JOINTLAB_NUMBA_PATCH=0 (both patches) or
JOINTLAB_LATE_LINK=0 (this one) leaves numba alone. tests/test_latelink.py checks that a late
callee's code is the callee's own optimised code and that the kernels compute the same with and
without the patch.
"""
from __future__ import annotations

import hashlib
import inspect
import os

import numba
from numba.core import codegen as _cg

NUMBA_VERSION = "0.68.1"
INLINE_THRESHOLD = 250               # LLVM's -O3 inline threshold (its cost units: about an instruction each)
LARGE = 4 * INLINE_THRESHOLD         # instructions of a called function above which its module links late

_ORIGINAL = _cg.CPUCodeLibrary.finalize
_applied = False
STATS = {"late": 0, "early": 0}      # modules linked after / before the caller's module passes


def _source_hash(fn):
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


# sha256 (first 16 hex digits) of inspect.getsource(CPUCodeLibrary.finalize) as NUMBA_VERSION ships it
SOURCE_HASH = "4b4c34b83488a72f"


def why_not():
    """None when the patch applies to this numba; otherwise the reason it does not."""
    if os.environ.get("JOINTLAB_NUMBA_PATCH", "1") == "0":
        return "JOINTLAB_NUMBA_PATCH=0"
    if os.environ.get("JOINTLAB_LATE_LINK", "1") == "0":
        return "JOINTLAB_LATE_LINK=0"
    if numba.__version__ != NUMBA_VERSION:
        return f"numba {numba.__version__} (the patch is for {NUMBA_VERSION})"
    try:
        h = _source_hash(_ORIGINAL)
    except (OSError, TypeError):
        return "the source of CPUCodeLibrary.finalize is not available"
    if h != SOURCE_HASH:
        return "CPUCodeLibrary.finalize differs from the version the patch was written against"
    return None


def applied():
    return _applied


def apply():
    """Install the late linking when why_not() is None. Returns True when it is installed."""
    global _applied
    if _applied:
        return True
    if why_not() is not None:
        return False
    _cg.CPUCodeLibrary.finalize = _finalize
    _applied = True
    return True


def _size(library, module, name):
    """Instructions of function `name` in a library's module for linking (counted once)."""
    sizes = library.__dict__.setdefault("_jointlab_sizes", {})
    n = sizes.get(name)
    if n is None:
        fn = module.get_function(name)
        n = 0 if fn.is_declaration else sum(1 for block in fn.blocks for _ in block.instructions)
        sizes[name] = n
    return n


def _finalize(self):
    """numba's CPUCodeLibrary.finalize (0.68.1) with the large callees' modules linked after the
    module passes (see the module docstring); every other line is numba's."""
    from numba.core import config
    from numba.core.codegen import require_global_compiler_lock, dump, ll     # ll: numba's llvmlite.binding

    require_global_compiler_lock()
    self._codegen._check_llvm_bugs()
    self._raise_if_finalized()
    if config.DUMP_FUNC_OPT:
        dump("FUNCTION OPTIMIZED DUMP %s" % self.name, self.get_llvm_str(), 'llvm')

    called = {f.name for f in self._final_module.functions if f.is_declaration}
    late = []
    seen = set()
    for library in self._linking_libraries:
        if library not in seen:
            # Parent inherits reload_init
            self._reload_init.update(library._reload_init)
            seen.add(library)
            module = library._get_module_for_linking()
            entries = [f.name for f in module.functions if f.name in called and not f.is_declaration]
            if entries and max(_size(library, module, n) for n in entries) > LARGE:
                late.append(module)
                STATS["late"] += 1
            else:
                self._final_module.link_in(module, preserve=True)
                STATS["early"] += 1

    # Optimize the module after the small dependences are linked in above, to allow for inlining.
    self._optimize_final_module()

    if late:
        for module in late:
            self._final_module.link_in(module, preserve=True)
        pb = ll.create_pass_builder(self._codegen._tm, ll.create_pipeline_tuning_options())
        pm = ll.create_new_module_pass_manager()
        pm.add_global_dead_code_eliminate_pass()
        pm.run(self._final_module, pb)

    self._final_module.verify()
    self._finalize_final_module()
