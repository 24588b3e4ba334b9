"""Bodies touch bodies (issue 31, items 3 and 4): every pair of collision shapes comes to rest on
another free body at the right height, energy never rises, the compiled step equals the Python
step; self-collision of a robot's links (adjacent links and SRDF pairs excluded, switchable); and
engine.Scene's free objects with their input checks.

The scenes are engine.Scene objects on engine.Ground: a lower body resting on the ground, an upper
one released 3 cm above its resting place. Known answer: the upper body's centre ends (and stays
over the last second) at the lower body's top plus its own half height, within 1 mm.
"""
import math

import numpy as np
import pytest

import engine
from engine import Scene, Simulator, Ground
from engine.multibody.visuals import Shape
from conftest import compiled_steps

DROP = 0.03


def _octagon_prism(radius, length):
    """Vertices of a regular octagonal prism (axis z), circumradius `radius`."""
    a = 2.0 * np.pi * np.arange(8) / 8
    ring = np.stack((radius * np.cos(a), radius * np.sin(a), np.zeros(8)), axis=1)
    return np.vstack((ring + [0, 0, -length / 2], ring + [0, 0, length / 2]))


# lower bodies: (how to add it, its top height when resting on the ground)
def _lower(scene, kind):
    if kind == "box":
        scene.add_box("lower", size=(0.4, 0.3, 0.2), mass=2.0, position=(0, 0, 0.1))
        return 0.2
    if kind == "cylinder":
        scene.add_cylinder("lower", radius=0.15, length=0.2, mass=2.0, position=(0, 0, 0.1))
        return 0.2
    if kind == "convex":        # an octagonal prism as a mesh hull (GJK/EPA), the cylinder's inertia
        scene.add_cylinder("lower", radius=0.15, length=0.2, mass=2.0, position=(0, 0, 0.1))
        return 0.2
    if kind == "sphere":
        scene.add_ball("lower", radius=0.1, mass=2.0, position=(0, 0, 0.1))
        return 0.2
    if kind == "capsule":       # lying along y on the ground (an engine.Scene has no capsule: a
        # cylinder's body, its collision shape swapped below)
        scene.add_cylinder("lower", radius=0.05, length=0.3, mass=2.0, position=(0, 0, 0.05),
                           rpy=(math.pi / 2, 0, 0))
        return 0.1
    raise ValueError(kind)


def _upper(scene, kind, top):
    """The upper body, released DROP above its rest; returns the height of its centre at rest."""
    if kind == "sphere":
        h = 0.04
        scene.add_ball("upper", radius=h, mass=0.5, position=(0, 0, top + h + DROP))
    elif kind == "box":
        h = 0.04
        scene.add_box("upper", size=(0.1, 0.12, 2 * h), mass=0.5, position=(0.01, 0.0, top + h + DROP))
    elif kind == "cylinder":
        h = 0.05
        scene.add_cylinder("upper", radius=0.04, length=2 * h, mass=0.5, position=(0.01, 0.0, top + h + DROP))
    elif kind == "convex":
        h = 0.05
        scene.add_cylinder("upper", radius=0.05, length=2 * h, mass=0.5, position=(0.01, 0.0, top + h + DROP))
    elif kind == "capsule":     # lying along x (crosswise on a lower capsule along y)
        h = 0.03
        scene.add_cylinder("upper", radius=h, length=0.2, mass=0.5, position=(0.0, 0.0, top + h + DROP),
                           rpy=(0, math.pi / 2, 0))
    else:
        raise ValueError(kind)
    return top + h


def _swap_shapes(world, lower, upper):
    """Give the bodies whose kind engine.Scene does not offer their collision shape."""
    cols = list(world.collisions)
    for i, c in enumerate(cols):
        kind = lower if c.link == "lower" else upper
        if kind == "convex":
            cols[i] = Shape("mesh", c.link, c.body, c.placement.copy(),
                            vertices=_octagon_prism(c.radius / math.cos(np.pi / 8), c.length))
        elif kind == "capsule":
            cols[i] = Shape("capsule", c.link, c.body, c.placement.copy(), radius=c.radius,
                            length=c.length - 2 * c.radius)
    world.collisions = cols
    return world


def _scene(lower, upper):
    sc = Scene()
    top = _lower(sc, lower)
    rest = _upper(sc, upper, top)
    return _swap_shapes(sc.build(), lower, upper), rest


PAIRS = [(lo, up) for lo in ("box", "cylinder", "convex") for up in ("sphere", "box", "capsule", "cylinder", "convex")]
PAIRS += [("sphere", "sphere"), ("capsule", "capsule")]


def _height(sim, name):
    w = sim.model
    return engine.body_poses(w, sim.q)[w.body_index(name) - 1][2, 3]


@pytest.mark.parametrize("lower, upper", PAIRS)
def test_a_body_dropped_on_a_free_body_comes_to_rest_on_it(lower, upper):
    """2.5 s at dt 1 ms (compiled step): the upper body lands, rests within 1 mm of its height
    on the lower one over the last second, the lower one stays on the ground, and the energy
    (kinetic + potential) never rises from one step to the next."""
    world, rest = _scene(lower, upper)
    sim = Simulator(world, dt=1e-3, ground=Ground(friction=0.8))
    E = [sum(sim.energy())]
    low0 = _height(sim, "lower")
    worst = 0.0
    for k in range(2500):
        sim.step()
        E.append(sum(sim.energy()))
        assert E[-1] <= E[-2] + 1e-9, f"energy rose by {E[-1] - E[-2]:.3g} J at step {k}"
        if k >= 1500:
            worst = max(worst, abs(_height(sim, "upper") - rest))
            assert abs(_height(sim, "lower") - low0) < 1e-3
    assert worst < 1e-3, f"{upper} on {lower}: {worst * 1e3:.3f} mm off its resting height"
    assert np.abs(sim.v).max() < 1e-3
    assert sim.dissipated >= 0.0
    # the lower body carries the upper one's weight: the contact forces between them sum to it
    up = sum(c.force for c in sim.contacts if c.body == "upper" and c.other == "lower")
    up = up - sum(c.force for c in sim.contacts if c.body == "lower" and c.other == "upper")
    assert abs(up[2] - 0.5 * 9.81) < 1e-6 * 0.5 * 9.81 + 1e-9


@pytest.mark.parametrize("dt", [1e-4, 1e-2, 5e-2, 0.1])
@pytest.mark.parametrize("lower, upper", [("box", "sphere"), ("box", "box"), ("capsule", "capsule"),
                                          ("convex", "cylinder")])
def test_drops_at_every_dt_rest_on_the_body_and_never_gain_energy(lower, upper, dt):
    """The same drops at dt 0.1 ms to 0.1 s (at 0.1 s the upper body falls 9.8 cm in its first step:
    it must be a candidate before it reaches the lower one, whose ground rows hold that step)."""
    world, rest = _scene(lower, upper)
    sim = Simulator(world, dt=dt, ground=Ground(friction=0.8))
    E = [sum(sim.energy())]
    for k in range(int(round(2.5 / dt))):
        sim.step()
        E.append(sum(sim.energy()))
        assert E[-1] <= E[-2] + 1e-9, f"energy rose by {E[-1] - E[-2]:.3g} J at step {k}"
    assert abs(_height(sim, "upper") - rest) < 1e-3
    assert sim.dissipated >= 0.0


def _python_twin(make):
    a, b = make(), make()
    b.set_control(lambda t, q, v: None)      # a Python callback forces the Python step
    return a, b


@pytest.mark.parametrize("lower, upper", [("box", "sphere"), ("box", "box"), ("cylinder", "convex"),
                                          ("capsule", "capsule"), ("convex", "capsule")])
def test_the_compiled_step_equals_the_python_step_between_bodies(lower, upper):
    def make():
        world, _ = _scene(lower, upper)
        q = world.neutral()
        iq = world.q_slice("upper_free")
        q[iq][:3] += (0.003, -0.002, 0.0)
        # tilted: it lands on an edge or a rim and tumbles; a convex hull lands flat (GJK/EPA's
        # normal, an iteration's result, moves 1e-9 with the last bits of the poses, which a tumble
        # on redundant contacts amplifies past any fixed tolerance)
        t = 0.0 if "convex" in (lower, upper) else 0.2
        q[iq.start + 3:iq.start + 7] = [math.cos(t / 2), 0.6 * math.sin(t / 2), 0.8 * math.sin(t / 2), 0.0]
        return Simulator(world, dt=1e-3, q=q, ground=Ground(friction=0.6))
    a, b = _python_twin(make)
    saw_pair = False
    for _ in range(4):
        a.step(150)
        for _ in range(150):
            b.step()
        assert a.t == b.t
        assert np.abs(a.q - b.q).max() < 1e-9
        assert np.abs(a.v - b.v).max() < 1e-7
        assert abs(a.dissipated - b.dissipated) < 1e-9
        assert len(a.contacts) == len(b.contacts)
        for ca, cb in zip(a.contacts, b.contacts):
            assert (ca.body, ca.other) == (cb.body, cb.other)
            assert np.abs(ca.point - cb.point).max() < 1e-9
            # GJK/EPA normals (convex hulls, cylinders) follow the last bits of the poses at 1e-9
            assert np.abs(ca.normal - cb.normal).max() < 1e-7
            assert np.abs(ca.force - cb.force).max() < 1e-6 * max(1.0, np.abs(cb.force).max())
            saw_pair |= ca.other != "ground"
    assert saw_pair                                # the comparison had body-body contacts in it


def test_restitution_per_body_bounces_a_ball_off_a_box():
    """A ball (e = 1) dropped 0.2 m onto a box (e = 1) lying on an inelastic ground: the pair's
    restitution is the mean of the two sides' (1), so it rebounds to nearly its height; with the
    box at e = 0 the mean is 0.5 and the apex is e^2 = 1/4 of the drop."""
    apex = {}
    for e_box in (1.0, 0.0):
        sc = Scene()
        sc.add_box("box", size=(0.4, 0.4, 0.2), mass=50.0, position=(0, 0, 0.1), restitution=e_box)
        sc.add_ball("ball", radius=0.05, mass=0.1, position=(0, 0, 0.45), restitution=1.0)
        w = sc.build()
        sim = Simulator(w, dt=1e-3, ground=Ground(restitution=0.0))
        zs = []
        bounced = False
        for _ in range(700):
            sim.step()
            vz = sim.v[w.v_slice("ball_free")][5]
            bounced |= vz > 0.5
            if bounced:
                zs.append(_height(sim, "ball"))
        apex[e_box] = max(zs) - 0.25
    assert abs(apex[1.0] / 0.2 - 1.0) < 0.03
    assert abs(apex[0.0] / 0.2 - 0.25) < 0.03


# ------------------------------------------------------------------ self-collision
def _folding_arm():
    """An arm pivoting about y at 1 m, held still (acceleration-prescribed), and a forearm hinged at
    its end that swings down under gravity onto a plate fixed to the world under it. The plate and
    the forearm belong to one robot (the chain hangs from the world), not adjacent; arm and forearm
    overlap at their hinge (adjacent: never tested)."""
    b = engine.ModelBuilder("folding")
    I = engine.Inertia(1.0, (0.25, 0, 0), 0.02 * np.eye(3))
    b.add_body("plate", "world", engine.Fixed(), engine.pose(p=(0.9, 0, 0.5)))
    b.add_body("arm", "world", engine.Revolute((0, 1, 0)), engine.pose(p=(0, 0, 1.0)), I)
    b.add_body("forearm", "arm", engine.Revolute((0, 1, 0)), engine.pose(p=(0.5, 0, 0)), I)
    b.collisions.append(Shape("box", "plate", 0, engine.pose(p=(0.9, 0, 0.5)), size=np.array([0.6, 0.4, 0.1])))
    b.collisions.append(Shape("box", "arm", 1, engine.pose(p=(0.25, 0, 0)), size=np.array([0.6, 0.1, 0.1])))
    b.collisions.append(Shape("box", "forearm", 2, engine.pose(p=(0.2, 0, 0)), size=np.array([0.4, 0.08, 0.08])))
    b.collisions.append(Shape("sphere", "forearm", 2, engine.pose(p=(0.5, 0, 0)), radius=0.05))
    return b.build()


def _fold(model, steps=1500):
    """(the simulator after `steps`, the forearm's largest angle on the way: q > 0 is down)."""
    sim = Simulator(model, dt=1e-3, q=[0.0, 0.0], joint_limits=True, ground=Ground(height=-1.0))
    sim.prescribed = np.array([True, False])        # the arm held at q = 0 (a_cmd = 0)
    top = 0.0
    for _ in range(steps):
        sim.step()
        top = max(top, sim.q[1])
    return sim, top


def test_self_collision_is_off_by_default_and_a_link_passes_through_the_base():
    model = _folding_arm()
    assert model.self_collision is False
    sim, top = _fold(model)
    assert top > 2.0                           # swung down through the plate (it touches it at 0.93)


def test_self_collision_on_stops_a_link_on_the_base_and_adjacent_links_never_push():
    model = _folding_arm()
    model.self_collision = True
    sim, top = _fold(model)
    assert top < 0.93
    # the forearm's ball rests on the plate: its centre 0.05 above the plate's top (z 0.55)
    x = engine.body_poses(model, sim.q)[model.body_index("forearm") - 1] @ [0.5, 0, 0, 1]
    assert abs(x[2] - 0.6) < 1e-3
    assert abs(sim.v[1]) < 1e-6
    assert all((c.body, c.other) == ("forearm", "ground") for c in sim.contacts)   # not arm-forearm
    assert len(sim.contacts) >= 1


def test_srdf_disable_collisions_lets_the_pair_pass_again():
    model = _folding_arm()
    model.self_collision = True
    srdf = """<robot name="folding"><disable_collisions link1="plate" link2="forearm" reason="Never"/></robot>"""
    assert model.disable_collisions(srdf) == 1
    sim, top = _fold(model)
    assert top > 2.0


# ------------------------------------------------------------------ engine.Scene
def test_scene_builds_free_bodies_with_their_mass_inertia_and_place():
    arm = engine.load_urdf(str(__import__("pathlib").Path(__file__).parent / "data" / "contact_pendulum.urdf"))
    sc = Scene(arm)
    sc.add_box("crate", size=(0.2, 0.4, 0.6), mass=3.0, position=(1, 2, 3), friction=0.3, restitution=0.2)
    sc.add_ball("ball", radius=0.1, mass=2.0, position=(0, 0, 1))
    sc.add_cylinder("can", radius=0.1, length=0.3, mass=1.5)
    w = sc.build()
    assert w.nbodies == arm.nbodies + 3 and w.nq == arm.nq + 21 and w.nv == arm.nv + 18
    assert arm.nbodies == 1                                   # the model given is untouched
    assert w.body_names[:arm.nbodies] == arm.body_names
    T = engine.body_poses(w, w.neutral())
    assert np.allclose(T[w.body_index("crate") - 1][:3, 3], (1, 2, 3))
    assert abs(w.mass - arm.mass - 6.5) < 1e-12
    I = w.body_inertia(w.body_index("crate")).I_com
    assert np.allclose(I, 3.0 / 12 * np.diag([0.16 + 0.36, 0.04 + 0.36, 0.04 + 0.16]))
    assert np.allclose(w.body_inertia(w.body_index("ball")).I_com, 0.4 * 2.0 * 0.01 * np.eye(3))
    Ic = w.body_inertia(w.body_index("can")).I_com
    assert np.allclose(np.diag(Ic), [1.5 * (0.03 + 0.09) / 12] * 2 + [0.5 * 1.5 * 0.01])
    assert w.contact_materials[w.body_index("crate")] == (0.3, 0.2)
    assert w.body_index("ball") not in w.contact_materials       # the ground's values
    # the arm's dynamics are unchanged by the objects (they are separate subtrees)
    q = w.neutral()
    q[0] = 0.3
    assert np.allclose(engine.gravity_forces(w, q)[:arm.nv], engine.gravity_forces(arm, q[:arm.nq]))
    # a free fall of the ball: g t^2 / 2
    sim = Simulator(w, dt=1e-3)
    sim.step(100)
    assert abs(engine.body_poses(w, sim.q)[w.body_index("ball") - 1][2, 3] - (1 - 0.5 * 9.81 * 0.01)) < 1e-6


@pytest.mark.parametrize("call, value, what", [
    (lambda s, x: s.add_box("b", size=(0.1, 0.1, 0.1), mass=x), -1.0, "mass"),
    (lambda s, x: s.add_box("b", size=(0.1, 0.1, 0.1), mass=x), float("nan"), "mass"),
    (lambda s, x: s.add_ball("b", radius=0.1, mass=x), 0.0, "mass"),
    (lambda s, x: s.add_box("b", size=(0.1, x, 0.1), mass=1.0), -0.1, "size"),
    (lambda s, x: s.add_box("b", size=(0.1, x, 0.1), mass=1.0), float("nan"), "size"),
    (lambda s, x: s.add_ball("b", radius=x, mass=1.0), float("nan"), "radius"),
    (lambda s, x: s.add_ball("b", radius=x, mass=1.0), -0.2, "radius"),
    (lambda s, x: s.add_cylinder("b", radius=0.1, length=x, mass=1.0), float("inf"), "length"),
    (lambda s, x: s.add_ball("b", radius=0.1, mass=1.0, friction=x), -0.5, "friction"),
    (lambda s, x: s.add_ball("b", radius=0.1, mass=1.0, friction=x), float("nan"), "friction"),
    (lambda s, x: s.add_box("b", size=(0.1, 0.1, 0.1), mass=1.0, restitution=x), 1.5, "restitution"),
    (lambda s, x: s.add_box("b", size=(0.1, 0.1, 0.1), mass=1.0, restitution=x), float("nan"), "restitution"),
    (lambda s, x: s.add_cylinder("b", radius=0.1, length=0.1, mass=1.0, restitution=x), -0.1, "restitution"),
])
def test_scene_bad_input_names_the_body_and_the_value(call, value, what):
    sc = Scene()
    with pytest.raises(ValueError) as e:
        call(sc, value)
    msg = str(e.value)
    assert "'b'" in msg and what in msg and repr(value) in msg
    assert sc.items == []                                  # nothing half-added


def test_scene_names_must_be_new():
    sc = Scene()
    sc.add_ball("b", radius=0.1, mass=1.0)
    with pytest.raises(ValueError, match="'b'.*taken"):
        sc.add_box("b", size=(0.1, 0.1, 0.1), mass=1.0)
    with pytest.raises(ValueError):
        Scene("not a model")


def test_fifty_bodies_the_broad_phase_keeps_only_the_near_pair():
    """50 objects on a grid 0.5 m apart and one ball resting on the first box: the sweep and prune
    over the shapes' bounding boxes (grown by the contact margin) passes one candidate pair of the
    1326 to the narrow phase, the step finds that pair's contact, and the ball stays on the box."""
    from engine.contact.geometry import ContactGeometry
    from engine.contact.detect import CONTACT_MARGIN
    from engine.algorithms.api import _world_poses
    from engine.collision import aabb, sweep_and_prune
    sc = Scene()
    for i in range(50):
        x, y = 0.5 * (i % 10), 0.5 * (i // 10)
        if i % 2 == 0:
            sc.add_box(f"b{i}", size=(0.1, 0.1, 0.1), mass=1.0, position=(x, y, 0.05))
        else:
            sc.add_ball(f"b{i}", radius=0.05, mass=1.0, position=(x, y, 0.05))
    sc.add_ball("top", radius=0.05, mass=0.5, position=(0.0, 0.0, 0.15))
    w = sc.build()
    g = ContactGeometry(w)
    T = _world_poses(w, w.neutral())
    shapes = [(s_, engine.body_poses(w, w.neutral())[b - 1]) for s_, b in zip(g.pair_shapes, g.pair_shape_body)]
    lo, hi = zip(*(aabb(s_, P) for s_, P in shapes))
    pairs = sweep_and_prune(np.array(lo) - CONTACT_MARGIN, np.array(hi) + CONTACT_MARGIN, g.pair_skip)
    assert len(g.pair_shapes) == 51 and pairs.tolist() == [[0, 50]]
    found = g.body_contacts(T, CONTACT_MARGIN)
    assert found and all({c[0], c[1]} == {w.body_index("b0"), w.body_index("top")} for c in found)
    sim = Simulator(w, dt=1e-3, ground=Ground())
    sim.step(20)
    assert abs(_height(sim, "top") - 0.15) < 1e-4
    assert any({c.body, c.other} == {"b0", "top"} for c in sim.contacts)
