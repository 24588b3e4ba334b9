"""Simulation speed: 10 s at 1 ms with RK4, JointLab vs MuJoCo vs a Python RK4 loop over Pinocchio,
in one process, side by side.

    python benchmarks/bench_simulation.py                        # panda, ur5, humanoid, talos
    python benchmarks/bench_simulation.py --robots panda --rounds 5 --seconds 10

The same URDF text goes to all three engines, with <visual>, <collision> and <dynamics> removed
(meshes stripped; joint damping zeroed everywhere: Talos's URDF damping diverges at 1 ms in every
engine). What each engine computes per step is the same physics: rigid-body dynamics of the same
bodies (fixed links merged into their parent in all three: MuJoCo's ``fusestatic="true"``, as
JointLab's loader and Pinocchio's inertias do; with "false" MuJoCo kept Talos's 15 and Panda's 4
fixed links as bodies of their own and computed them every step), gravity, no joint friction
(MuJoCo's ``dof_frictionloss`` zeroed: JointLab does not simulate joint friction), no armature,
no damping, no joint limits, no contact, no equality constraints, RK4. MuJoCo: contacts, joint
limits and equalities (URDF mimic) disabled (``disableflags``), integrator RK4, time step 1 ms
(``--dt``), a free joint added at the root of floating-base robots; ``mj_step(m, d, nstep)``
advances the whole run in one call (its own loop, as ours). JointLab: ``Simulator(model, dt=1e-3, integrator="rk4", joint_limits=False).step(n)``
(joint limits off, as in the two others; one
compiled call). Pinocchio: a Python loop of RK4 on the Lie group over ``pin.aba`` and
``pin.integrate`` (4 ABA calls per step); it is run for 1 s and its real-time factor extrapolated.

All start from the same configuration (neutral pose plus 0.2 rad on every 1-dof joint, zero
velocity, zero torque: the robot swings and, if floating, falls) and q after 1 s is compared joint
by joint by name (max |difference| of joint angles and base position). Timing: ``rounds``
interleaved rounds (JointLab, MuJoCo, Pinocchio in turn); the best and median real-time factors
(simulated time / wall time) are reported, and the ratio of MuJoCo's time to ours (>= 1: ours is
faster). The resident memory after the runs is printed at the end.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

ROBOTS = {
    # name: (where, path, floating base)
    "panda": ("erd", "panda_description/urdf/panda.urdf", False),
    "ur5": ("erd", "ur_description/urdf/ur5_robot.urdf", False),
    "humanoid": ("assets", "humanoid.urdf", True),
    "talos": ("erd", "talos_data/robots/talos_full_v2.urdf", True),
}
DT = 1e-3


def urdf_text(name):
    where, rel, floating = ROBOTS[name]
    if where == "assets":
        path = os.path.join(os.path.dirname(HERE), "assets", rel)
    else:
        from engine import catalog
        d = catalog.example_robot_data_dir()
        if d is None:
            sys.exit("example-robot-data is not installed")
        path = str(d / rel)
    text = open(path).read()
    for tag in ("visual", "collision"):
        text = re.sub(rf"<{tag}\b.*?</{tag}>", "", text, flags=re.S)
        text = re.sub(rf"<{tag}\b[^>]*/>", "", text)
    text = re.sub(r"<dynamics\b[^>]*/>", "", text)
    text = re.sub(r"<dynamics\b.*?</dynamics>", "", text, flags=re.S)
    text = re.sub(r"<transmission\b.*?</transmission>", "", text, flags=re.S)
    text = re.sub(r"<gazebo\b.*?</gazebo>", "", text, flags=re.S)
    return text, floating


# ------------------------------------------------------------------ the three engines
class Ours:
    label = "JointLab"

    def __init__(self, text, floating, q0_of):
        import engine
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = engine.load_urdf_string(text, floating_base=floating, load_meshes=False, strict=False)
        self.engine = engine
        self.q0 = q0_of(self)
        assert not np.any(self.model.damping)

    def joint_q(self, q):
        """{joint name: value} of the 1-dof joints, and the base position (or None)."""
        out = {j.name: q[j.idx_q] for j in self.model.joints if j.nq == 1}
        base = next((q[j.idx_q:j.idx_q + 3] for j in self.model.joints if j.kind == "free"), None)
        return out, base

    def one_dof(self):
        return [j.name for j in self.model.joints if j.nq == 1]

    def run(self, seconds):
        sim = self.engine.Simulator(self.model, dt=DT, integrator="rk4", q=self.q0, joint_limits=False)
        t0 = time.perf_counter()
        sim.step(int(round(seconds / DT)))
        return time.perf_counter() - t0, sim.q.copy()


class MuJoCo:
    label = "MuJoCo"

    def __init__(self, text, floating, ours):
        import mujoco
        self.mj = mujoco
        text = text.replace("</robot>", '<mujoco><compiler discardvisual="true" fusestatic="true" '
                                        'balanceinertia="false"/></mujoco></robot>', 1)
        spec = mujoco.MjSpec.from_string(text)
        if floating:
            root = spec.worldbody.first_body()
            root.add_freejoint(name="root_joint")
        m = spec.compile()
        m.opt.timestep = DT
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        # no contacts, no joint limits, no equality constraints (MuJoCo turns URDF <mimic> into
        # equalities; JointLab and Pinocchio load mimic joints as independent joints)
        m.opt.disableflags |= (int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
                               | int(mujoco.mjtDisableBit.mjDSBL_EQUALITY))
        m.dof_damping[:] = 0.0
        m.dof_armature[:] = 0.0
        m.dof_frictionloss[:] = 0.0
        m.jnt_stiffness[:] = 0.0
        self.m = m
        self.d = mujoco.MjData(m)
        # the same initial configuration, joint by joint
        q0 = np.zeros(m.nq)
        mujoco.mj_resetData(m, self.d)
        q0[:] = self.d.qpos
        oq = ours.q0
        for j in ours.model.joints:
            if j.nq == 1:
                q0[m.joint(j.name).qposadr[0]] = oq[j.idx_q]
            elif j.kind == "free":
                a = m.joint("root_joint").qposadr[0]
                q0[a:a + 7] = oq[j.idx_q:j.idx_q + 7]
        self.q0 = q0

    def joint_q(self, q):
        m = self.m
        out = {}
        for i in range(m.njnt):
            if int(m.jnt_type[i]) in (int(self.mj.mjtJoint.mjJNT_HINGE), int(self.mj.mjtJoint.mjJNT_SLIDE)):
                out[self.mj.mj_id2name(m, self.mj.mjtObj.mjOBJ_JOINT, i)] = q[m.jnt_qposadr[i]]
        base = None
        if m.njnt and int(m.jnt_type[0]) == int(self.mj.mjtJoint.mjJNT_FREE):
            base = q[:3]
        return out, base

    def run(self, seconds):
        d = self.d
        self.mj.mj_resetData(self.m, d)
        d.qpos[:] = self.q0
        d.qvel[:] = 0.0
        self.mj.mj_forward(self.m, d)
        n = int(round(seconds / DT))
        t0 = time.perf_counter()
        self.mj.mj_step(self.m, d, nstep=n)
        return time.perf_counter() - t0, d.qpos.copy()


class Pinocchio:
    label = "Pinocchio (Python RK4)"

    def __init__(self, text, floating, ours):
        import pinocchio as pin
        self.pin = pin
        self.m = (pin.buildModelFromXML(text, pin.JointModelFreeFlyer()) if floating
                  else pin.buildModelFromXML(text))
        self.d = self.m.createData()
        q0 = pin.neutral(self.m)
        oq = ours.q0
        for j in ours.model.joints:
            if j.nq == 1 and self.m.existJointName(j.name):
                jm = self.m.joints[self.m.getJointId(j.name)]
                if jm.nq == 1:
                    q0[jm.idx_q] = oq[j.idx_q]
                else:   # continuous joint as (cos, sin)
                    q0[jm.idx_q:jm.idx_q + 2] = np.cos(oq[j.idx_q]), np.sin(oq[j.idx_q])
            elif j.kind == "free":
                x = oq[j.idx_q:j.idx_q + 7]
                q0[:7] = np.r_[x[:3], x[4:7], x[3]]
        self.q0 = q0

    def joint_q(self, q):
        out = {}
        for jid in range(1, self.m.njoints):
            jm = self.m.joints[jid]
            name = self.m.names[jid]
            if jm.nq == 1:
                out[name] = q[jm.idx_q]
            elif jm.nq == 2 and jm.nv == 1:
                out[name] = np.arctan2(q[jm.idx_q + 1], q[jm.idx_q])
        base = q[:3] if self.m.joints[1].nq == 7 else None
        return out, base

    def run(self, seconds):
        pin, m, d = self.pin, self.m, self.d
        q = self.q0.copy()
        v = np.zeros(m.nv)
        tau = np.zeros(m.nv)
        h = DT
        n = int(round(seconds / DT))
        t0 = time.perf_counter()
        for _ in range(n):
            a1 = pin.aba(m, d, q, v, tau).copy()
            v2 = v + 0.5 * h * a1
            a2 = pin.aba(m, d, pin.integrate(m, q, 0.5 * h * v), v2, tau).copy()
            v3 = v + 0.5 * h * a2
            a3 = pin.aba(m, d, pin.integrate(m, q, 0.5 * h * v2), v3, tau).copy()
            v4 = v + h * a3
            a4 = pin.aba(m, d, pin.integrate(m, q, h * v3), v4, tau).copy()
            q = pin.integrate(m, q, (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + v4))
            v = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        return time.perf_counter() - t0, q


def start_q(ours):
    q = ours.model.neutral()
    for j in ours.model.joints:
        if j.nq == 1:
            lo, hi = float(j.lower[0]), float(j.upper[0])
            x = 0.2
            if np.isfinite(lo) and np.isfinite(hi):
                x = min(max(x, lo), hi) if not (lo <= 0.2 <= hi) else 0.2
            q[j.idx_q] = x
    return q


def compare(a, qa, b, qb):
    ja, ba = a.joint_q(qa)
    jb, bb = b.joint_q(qb)
    common = set(ja) & set(jb)
    d = max((abs(ja[k] - jb[k]) for k in common), default=float("nan"))
    if ba is not None and bb is not None:
        d = max(d, float(np.abs(np.asarray(ba) - np.asarray(bb)).max()))
    return d, len(common)


def rss_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main():
    global DT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-pinocchio", action="store_true")
    ap.add_argument("--dt", type=float, default=1e-3, help="time step of all three engines (default 1e-3 s)")
    args = ap.parse_args()
    DT = args.dt
    rows = []
    for name in args.robots:
        text, floating = urdf_text(name)
        ours = Ours(text, floating, start_q)
        engines = [ours, MuJoCo(text, floating, ours)]
        if not args.no_pinocchio:
            engines.append(Pinocchio(text, floating, ours))
        # warm-up, and q after 1 s from each
        q1 = {}
        for e in engines:
            e.run(0.01)
            q1[e.label] = e.run(1.0)[1]
        times = {e.label: [] for e in engines}
        for _ in range(args.rounds):
            for e in engines:
                secs = args.seconds if not isinstance(e, Pinocchio) else 1.0
                wall, _ = e.run(secs)
                times[e.label].append(secs / wall)
        dq_mj, n_mj = compare(ours, q1[ours.label], engines[1], q1["MuJoCo"])
        line = {"robot": name, "nv": ours.model.nv, "dq_mujoco": dq_mj, "joints": n_mj}
        for e in engines:
            r = np.array(times[e.label])
            line[e.label] = (r.max(), np.median(r))
        if not args.no_pinocchio:
            line["dq_pin"] = compare(ours, q1[ours.label], engines[2], q1[engines[2].label])[0]
        rows.append(line)
        print(f"{name}: done", flush=True)
    print()
    print(f"{args.seconds:g} s at {DT * 1e3:g} ms, RK4, no contact, no limits, no joint friction, damping zeroed, "
          f"fixed links merged in all; real-time factor (best / median of {args.rounds} rounds)")
    head = f"{'robot':10s} {'nv':>3s} | {'JointLab':>16s} | {'MuJoCo':>16s} | {'MuJoCo/ours time':>16s} | "
    head += f"{'Pinocchio loop':>16s} | {'|dq| vs MuJoCo':>14s} {'vs pin':>9s}"
    print(head)
    print("-" * len(head))
    for r in rows:
        o, mj = r["JointLab"], r["MuJoCo"]
        pn = r.get("Pinocchio (Python RK4)", (float("nan"), float("nan")))
        print(f"{r['robot']:10s} {r['nv']:3d} | {o[0]:7.1f} / {o[1]:6.1f} | {mj[0]:7.1f} / {mj[1]:6.1f} | "
              f"{o[1] / mj[1]:8.2f} (med)  | {pn[0]:7.2f} / {pn[1]:6.2f} | {r['dq_mujoco']:14.2e} "
              f"{r.get('dq_pin', float('nan')):9.2e}")
    print()
    print("MuJoCo/ours time >= 1.00 means JointLab is at least as fast as MuJoCo. |dq|: max difference of the")
    print("joint angles (rad) and base position (m) after 1 s against JointLab (joints matched by name).")
    print(f"resident memory after the runs: {rss_mib():.0f} MiB (this process, all engines loaded)")


if __name__ == "__main__":
    main()
