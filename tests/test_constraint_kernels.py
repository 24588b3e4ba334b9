"""The compiled closed-loop path (engine/loops/kernels.py) against today's Python path
(engine.loops.constraints / engine.loops.constrained): rows f, A, dA dq of every built-in kind, constrained
forward and hybrid dynamics, and whole simulations, on every shipped loop model and on random trees
with every closure kind."""
import numpy as np
import pytest

import engine
from engine import catalog
from engine.loops.constraints import active_constraints
from engine.loops.constrained import _forward_python, _hybrid_python, _project_python
from engine.loops.kernels import (pack, constraint_rows, constrained_dynamics, project_into, loop_work_size,
                                  RANK_DEFICIENT, NOT_PROJECTED)
from conftest import assert_close
from loop_models import LINKAGES, linkage, limited, random_closed_pair, CLOSURE_KINDS


def compiled_rows(model, q, v, constraints):
    ci, cf, m = pack(constraints, model)
    f, A, bias = np.empty(m), np.empty((m, model.nv)), np.empty(m)
    ws = np.zeros(model.nbodies + 1, dtype=engine.multibody.model.WS_DTYPE).view(np.uint8)
    assert constraint_rows(model._mb, ws, q, v, ci, cf, f, A, bias) == 0
    return f, A, bias


def compiled_dynamics(model, q, v, tau, constraints, prescribed=None, a=None, gains=None):
    ci, cf, m = pack(constraints, model)
    nv = model.nv
    pres = np.zeros(nv, dtype=bool) if prescribed is None else prescribed
    a = np.zeros(nv) if a is None else a
    g = np.zeros(3) if gains is None else np.array([1.0, *gains])
    ws1 = np.zeros(model.nbodies + 1, dtype=engine.multibody.model.WS_DTYPE).view(np.uint8)
    ws2 = np.zeros(model.nbodies + 1, dtype=engine.multibody.model.WS_DTYPE).view(np.uint8)
    a_out, tau_out, lam = np.empty(nv), np.empty(nv), np.empty(m)
    st = constrained_dynamics(model._mb, ws1, ws2, q, v, pres, a, tau, ci, cf, m, g, a_out, tau_out, lam)
    assert st == 0, st
    return a_out, tau_out, lam


def same_rows(model, q, v, constraints):
    f, A, bias, _ = engine.constraint_system(model, q, v, constraints)
    fc, Ac, bc = compiled_rows(model, q, v, constraints)
    assert np.array_equal(np.isnan(f), np.isnan(fc))
    hol = ~np.isnan(f)
    assert_close(fc[hol], f[hol], 1e-12, "f")
    assert_close(Ac, A, 1e-12, "A")
    assert_close(bc, bias, 1e-11, "dA dq")


def state(model, rng, q0=None):
    q0 = catalog.initial_state(model)[0] if q0 is None else q0
    q = engine.integrate(model, q0, 0.05 * rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.mark.parametrize("name", LINKAGES)
def test_rows_and_dynamics_of_the_shipped_loop_models(name):
    model = linkage(name)
    cs = active_constraints(model)
    assert pack(cs, model) is not None
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, v, tau = state(model, rng)
        same_rows(model, q, v, cs)
        a, lam = _forward_python(model, q, v, tau, None, (10.0, 10.0))
        ac, tc, lc = compiled_dynamics(model, q, v, tau, cs, gains=(10.0, 10.0))
        assert_close(ac, a, 1e-9, f"{name} ddq")
        assert_close(lc, lam, 1e-9, f"{name} lambda")
        # hybrid: the first joint acceleration-prescribed (the rolling disk has one joint only)
        if len(model.joints) < 2:
            continue
        pres = np.zeros(model.nv, dtype=bool)
        j = model.joints[0]
        pres[j.idx_v:j.idx_v + j.nv] = True
        acc = rng.normal(size=model.nv)
        try:
            a, t, lam = _hybrid_python(model, q, v, pres, acc, tau, None, None)
        except engine.InputError:
            continue
        ac, tc, lc = compiled_dynamics(model, q, v, tau, cs, pres, acc)
        assert_close(ac, a, 1e-9, f"{name} hybrid ddq")
        assert_close(tc, t, 1e-9, f"{name} hybrid tau")
        assert_close(lc, lam, 1e-9, f"{name} hybrid lambda")


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_with_every_closure_kind(seed):
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    assert {c.kind for c in cs} == set(CLOSURE_KINDS)
    rng = np.random.default_rng(seed)
    # a planar closure (point constraint along two directions) between two random links
    names = [n for n in model.frames if model.frames[n].body != 0]
    planar = engine.PointConstraint("planar", names[1], names[-1], point_a=(0.1, 0.0, 0.2),
                                    point_b=(0.0, -0.1, 0.05), directions=[[1, 0, 0], [0, 0.6, 0.8]])
    if model.frames[names[1]].body != model.frames[names[-1]].body:
        planar.bind(model)
        same_rows(model, *state(model, rng, q0)[:2], cs + [planar])
    for _ in range(3):
        q, v, tau = state(model, rng, q0)
        same_rows(model, q, v, cs)
        a, lam = _forward_python(model, q, v, tau, None, (5.0, 5.0), cs)
        ac, _, lc = compiled_dynamics(model, q, v, tau, cs, gains=(5.0, 5.0))
        assert_close(ac, a, 1e-8, "ddq")
        assert_close(lc, lam, 1e-8, "lambda")


def test_rank_deficient_rows_take_the_rank_revealing_path():
    """The shipped four-bar closed with a 3D point (3 rows, rank 2 in the plane): the kernel
    declines, the simulator's Python path warns once with the row names."""
    model = linkage("four_bar").clone()
    c = active_constraints(model)[0]
    point = engine.PointConstraint("closure3d", c.link_a, c.link_b, frame_a=c.frame_a, frame_b=c.frame_b)
    point.bind(model)
    q, v, tau = state(model, np.random.default_rng(0))
    ci, cf, m = pack([point], model)
    ws1 = np.zeros(model.nbodies + 1, dtype=engine.multibody.model.WS_DTYPE).view(np.uint8)
    ws2 = ws1.copy()
    st = constrained_dynamics(model._mb, ws1, ws2, q, v, np.zeros(model.nv, bool), np.zeros(model.nv), tau,
                              ci, cf, m, np.zeros(3), np.empty(model.nv), np.empty(model.nv), np.empty(m))
    assert st == RANK_DEFICIENT
    model.constraints = [point]
    sim = engine.Simulator(model, q=q)
    with pytest.warns(engine.ConstraintWarning, match=r"closure3d\["):
        sim.step(3)


@pytest.mark.parametrize("name", LINKAGES)
def test_simulation_with_compiled_loops_equals_the_python_path(name):
    model = linkage(name)
    q0, v0 = catalog.initial_state(model)
    out = []
    for compiled in (True, False):
        sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
        if not compiled:
            sim._steploop().packed_loops = lambda active, fresh=False: None
        sim.step(200)
        out.append(sim)
    a, b = out
    assert_close(a.q, b.q, 1e-9, f"{name} q after 0.2 s")
    assert_close(a.v, b.v, 1e-8, f"{name} v after 0.2 s")
    assert_close(a.lam, b.lam, 1e-7, f"{name} lambda")


def compiled_projection(model, q, v, constraints, prescribed=None):
    ci, cf, m = pack(constraints, model)
    nv = model.nv
    q, v = q.copy(), v.copy()
    ws1 = np.zeros(model.nbodies + 1, dtype=engine.multibody.model.WS_DTYPE).view(np.uint8)
    ws2 = ws1.copy()
    lw = np.full(loop_work_size(nv, m), np.nan)      # scratch need not be clean
    pres = np.zeros(nv, bool) if prescribed is None else prescribed
    st = project_into(model._mb, ws1, ws2, q, v, pres, ci, cf, m, lw, np.empty(model.nq))
    return st, q, v


def check_projection(model, q, v, cs, what, prescribed=None):
    st, qc, vc = compiled_projection(model, q, v, cs, prescribed)
    assert st == 0, (what, st)
    qp, vp = _project_python(model, q, v, cs, prescribed=prescribed)
    assert all(np.array_equal(x, y) for x, y in
               zip(engine.project_constraints(model, q, v, cs, prescribed=prescribed), (qc, vc)))
    assert_close(qc, qp, 1e-11, f"{what} projected q")
    assert_close(vc, vp, 1e-10, f"{what} projected v")
    assert engine.constraint_residual(model, qc, cs) <= 1e-12
    f, A, _, _ = engine.constraint_system(model, qc, vc, cs)
    assert np.abs(A @ vc).max() <= 1e-10 * (1.0 + np.abs(v).max()), f"{what}: A v after"
    if prescribed is not None:
        assert np.array_equal(vc[prescribed], v[prescribed]), f"{what}: a prescribed velocity moved"
    return qc


@pytest.mark.parametrize("name", LINKAGES)
def test_compiled_projection_equals_project_constraints(name):
    """loopkernels.project_into (the step loop's drift correction) against the Python function, from
    states pushed off the loops."""
    model = linkage(name)
    cs = active_constraints(model)
    rng = np.random.default_rng(21)
    for k in range(4):
        q, v, _ = state(model, rng)
        q = engine.integrate(model, q, 10.0 ** -(k + 2) * rng.normal(size=model.nv))
        assert engine.constraint_residual(model, q, cs) > 1e-9
        check_projection(model, q, v, cs, name)


@pytest.mark.parametrize("name", ["four_bar", "five_bar", "closed_chain_leg"])
def test_projection_keeps_the_velocity_of_prescribed_joints(name):
    """With a prescription mask the velocity correction is the hybrid system's response: the
    prescribed joint (a motor) keeps its velocity, the others absorb the correction."""
    model = linkage(name)
    cs = active_constraints(model)
    rng = np.random.default_rng(8)
    pres = np.zeros(model.nv, dtype=bool)
    pres[0] = True
    for k in range(3):
        q, v, _ = state(model, rng)
        q = engine.integrate(model, q, 10.0 ** -(k + 2) * rng.normal(size=model.nv))
        check_projection(model, q, v, cs, name, pres)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_projection_on_random_trees_with_every_closure_kind(seed):
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    rng = np.random.default_rng(seed)
    q, v = engine.project_constraints(model, q0, rng.normal(size=model.nv), cs)
    q = engine.integrate(model, q, 1e-3 * rng.normal(size=model.nv))
    check_projection(model, q, v, cs, f"seed {seed}")


def test_compiled_projection_declines_what_python_must_do():
    """Redundant rows (the four-bar closed by a 3D point in its plane): the kernel declines and the
    Python function projects and names the rows."""
    model = linkage("four_bar").clone()
    c = active_constraints(model)[0]
    point = engine.PointConstraint("closure3d", c.link_a, c.link_b, frame_a=c.frame_a, frame_b=c.frame_b)
    point.bind(model)
    q, v, _ = state(model, np.random.default_rng(3))
    st, _, _ = compiled_projection(model, q, v, [point])
    assert st == NOT_PROJECTED


@pytest.mark.parametrize("name", LINKAGES)
def test_steps_that_drift_project_in_the_compiled_loop(name):
    """Semi-implicit Euler lets the loops drift past the tolerance: the compiled loop projects (no
    step in Python) and ends where the Python step ends, with the same projections reported."""
    model = linkage(name)
    q0, v0 = catalog.initial_state(model)
    out = []
    for compiled in (True, False):
        sim = engine.Simulator(model, dt=2e-3, integrator="semi_implicit_euler", q=q0, v=v0, joint_limits=False)
        sim.loop_tolerance = 1e-5 * model.characteristic_length()
        python_steps = []
        step_once = sim._step_once
        sim._step_once = lambda: (python_steps.append(sim.t), step_once())
        if not compiled:
            sim._steploop().packed_loops = lambda active, fresh=False: None
        sim.step(250)
        out.append((sim, len(python_steps)))
    (a, na), (b, nb) = out
    assert na == 0 and nb == 250
    assert a.loop_projections == b.loop_projections > 0, (a.loop_projections, b.loop_projections)
    assert a.last_loop_projection[:2] == b.last_loop_projection[:2]
    assert_close(a.last_loop_projection[2], b.last_loop_projection[2], 1e-6, "residual before")
    assert_close(a.q, b.q, 1e-9, f"{name} q")
    assert_close(a.v, b.v, 1e-8, f"{name} v")


@pytest.mark.parametrize("name, integrator, seconds, prescribe", [
    ("five_bar", "semi_implicit_euler", 3.0, False),     # the left elbow reaches its limit, drifts, projects
    ("five_bar", "rk4", 3.0, False),
    ("four_bar", "euler", 2.0, False),                   # explicit Euler gains energy until the limits stop it
    ("slider_crank", "semi_implicit_euler", 2.0, False),  # the slider hits its stroke limits
    ("five_bar", "semi_implicit_euler", 1.4, True),      # one motor prescribed, runs onto its own stop
])
def test_loops_with_joint_limits_step_compiled_as_the_python_step(name, integrator, seconds, prescribe):
    """Closed loops with joint limits: the compiled unilateral step (engine.contact.step) puts the
    loop rows into the limit solve and projects drift as the Python step does: no step in Python,
    the same trajectory, multipliers, limit torques, projections and energy account. The four-bar
    and the slider-crank turn fully (continuous joints): they run with their crank and coupler or
    rod limited to +-2 pi (loop_models.limited). The prescribed motor of the five-bar reaches its own
    +2 pi stop: the stop wins (issue 31), and the steps that could bring a prescribed
    joint onto its stop are the Python step's (the compiled step can not stop one), so there the
    compiled run takes some Python steps."""
    model = linkage(name) if name == "five_bar" else limited(name)
    q0, v0 = catalog.initial_state(model)
    n = int(round(seconds / 1e-3))
    out = []
    for compiled in (True, False):
        sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0, v=v0, joint_limits=True)
        if prescribe:
            sim.prescribed[0] = True
            sim.a_cmd = np.zeros(model.nv)
            sim.a_cmd[0] = 5.0         # spun up until a joint of the linkage reaches its limit
        python_steps = []
        step_once = sim._step_once
        sim._step_once = lambda: (python_steps.append(sim.t), step_once())
        if not compiled:
            sim._steploop().packed_loops = lambda active, fresh=False: None
        sim.step(n)
        out.append((sim, len(python_steps)))
    (a, na), (b, nb) = out
    assert (na == 0 or (prescribe and na < n // 4)) and nb == n
    assert a.contact_stats["steps"] == b.contact_stats["steps"] > 0      # steps with a limit near
    assert a.loop_projections == b.loop_projections
    assert_close(a.q, b.q, 1e-9, f"{name} q")
    assert_close(a.v, b.v, 1e-8, f"{name} v")
    assert_close(a.lam, b.lam, 1e-7, f"{name} multipliers")
    assert_close(a.tau, b.tau, 1e-7, f"{name} tau")
    assert_close(a.limit_forces, b.limit_forces, 1e-7, f"{name} limit torques")
    assert abs(a.work - b.work) < 1e-9 and abs(a.dissipated - b.dissipated) < 1e-9
    if prescribe:       # the motor kept its motion through the limit impulses and the projections,
        assert a.loop_projections > 0       # until its own stop held it there
        j = model.joints[0]
        assert a.prescribed[j.idx_v] and abs(a.q[j.idx_q] - j.upper[0]) < 1e-9
        assert a.blocked[j.idx_v] and b.blocked[j.idx_v]


@pytest.mark.parametrize("name", LINKAGES)
def test_public_constrained_dynamics_use_the_kernel_and_agree(name):
    model = linkage(name)
    q, v, tau = state(model, np.random.default_rng(5))
    a, lam = engine.constrained_forward_dynamics(model, q, v, tau, None, (3.0, 3.0))
    a_py, lam_py = _forward_python(model, q, v, tau, None, (3.0, 3.0))
    assert_close(a, a_py, 1e-9, "ddq")
    assert_close(lam, lam_py, 1e-9, "lambda")


def test_the_packed_rows_cache_sees_every_parameter_pack_reads():
    """pack_cached reuses the packed rows while a constraint's parameters are unchanged. For every
    built-in kind, every attribute whose change changes pack()'s output (found by changing each
    attribute in turn, by assignment and, for arrays, in place) must also change what pack_cached
    returns: a stale pack would simulate the old mechanism."""
    import copy
    from engine.loops.constraints import pack_cached
    pair, cs, _ = random_closed_pair(0)
    model = pair.model
    disk = linkage("rolling_disk")
    seen = {}
    for mdl, constraints in ((model, cs), (disk, [c for c in disk.constraints if c.enabled])):
        mdl = copy.copy(mdl)                  # the cache lives in the model's __dict__: keep it ours
        mdl.__dict__.pop("_pack_cache", None)
        for c in constraints:
            for name, value in list(vars(c).items()):
                if isinstance(value, bool) or not isinstance(value, (int, float, tuple, np.ndarray)):
                    continue
                base = pack(constraints, mdl)
                assert pack_cached(constraints, mdl) is not None
                if isinstance(value, np.ndarray):
                    edits = [("assigned", value + 0.25), ("in place", None)]
                elif isinstance(value, tuple):
                    edits = [("assigned", tuple(x + 1 for x in value))]
                else:
                    edits = [("assigned", value + 1)]
                for how, new in edits:
                    if how == "in place":
                        value.reshape(-1)[0] += 0.25
                    else:
                        setattr(c, name, new)
                    try:
                        changed = pack(constraints, mdl)
                    except Exception:
                        changed = None            # not a value pack accepts: nothing to cache
                    if changed is not None and not all(np.array_equal(x, y) for x, y in zip(base[:2], changed[:2])):
                        got = pack_cached(constraints, mdl)
                        assert all(np.array_equal(x, y) for x, y in zip(got[:2], changed[:2])), \
                            f"{c.kind} constraint: the cached pack missed a change of {name} ({how})"
                        seen.setdefault(c.kind, set()).add(name)
                    if how == "in place":
                        value.reshape(-1)[0] -= 0.25
                    else:
                        setattr(c, name, value)
                    pack_cached(constraints, mdl)
    # each kind was exercised on the attributes that define it
    assert {"point", "revolute", "weld", "distance", "gear", "rolling"} <= set(seen), seen
    assert {"P_a", "P_b"} <= seen["weld"] and "length" in seen["distance"] and "ratio" in seen["gear"], seen
    assert {"P", "radius", "axis"} <= seen["rolling"], seen
