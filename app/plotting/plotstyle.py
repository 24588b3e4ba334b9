"""How the live plots look and what they show first, without Qt: the colour-blind-safe palette,
one plot row per physical unit (labels and order), angle wrapping to (-pi, pi] with the curve
broken at each wrap, and the default channels of a model (the joints expected to move, plus the
total energy)."""
from __future__ import annotations

import numpy as np

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision
# deficiency. Their yellow (#F0E442) is left out: it does not read on a white background.
PALETTE = ["#0072B2",   # blue
           "#D55E00",   # vermillion
           "#009E73",   # bluish green
           "#CC79A7",   # reddish purple
           "#E69F00",   # orange
           "#56B4E9",   # sky blue
           "#000000"]   # black
# past len(PALETTE) curves in one row, the colours come back with these dash patterns
DASHES = ("solid", "dash", "dot", "dashdot")

# rows top to bottom; a unit not listed goes below them (alphabetically)
UNIT_ORDER = ("rad", "m", "rad/s", "m/s", "rad/s^2", "m/s^2", "N·m", "N", "J")
RESIDUAL_ROW = "drift "      # prefix of the residual rows' keys (they share a unit with q)
RTF_ROW = "rtf"


def row_key(layout, col):
    """The row a column is drawn in: its unit, except the residuals |f(q)| (drift, own rows) and
    the real-time factor (no unit)."""
    name = layout.names[col]
    if name == "residual" or name.startswith("residual:"):
        return RESIDUAL_ROW + layout.units[col]
    if name == "rtf":
        return RTF_ROW
    return layout.units[col] or "unitless"     # quaternion components


def row_order(key):
    if key in UNIT_ORDER:
        return (0, UNIT_ORDER.index(key), key)
    if key.startswith(RESIDUAL_ROW):
        return (2, 0, key)
    if key == RTF_ROW:
        return (3, 0, key)
    return (1, 0, key)


def row_label(key):
    """The row's y-axis label: its unit (exponents as superscripts)."""
    if key.startswith(RESIDUAL_ROW):          # short: the label runs along a short row
        return pretty_unit(key[len(RESIDUAL_ROW):])
    if key == RTF_ROW:
        return "ratio"
    return pretty_unit(key)


def pretty_unit(unit):
    return unit.replace("^2", "²")


def curve_label(layout, col):
    """A curve's legend entry, without its unit (the row's axis says it)."""
    name = layout.names[col]
    if layout.nlam and layout.lam.start <= col < layout.lam.stop:
        return f"λ {name.split(':', 1)[1]} {layout.lam_labels[col - layout.lam.start]}"
    if name.startswith("energy:"):
        return f"{name[7:]} energy" if name[7:] in ("kinetic", "potential", "total") else name[7:]
    if name == "residual":
        return "drift |f(q)|"
    if name.startswith("residual:"):
        return f"|f(q)| {name[9:]}"
    if name == "rtf":
        return "real-time factor"
    return name.replace(":", " ", 1)


def style_of(k):
    """(colour, dash) of the k-th curve of a row."""
    return PALETTE[k % len(PALETTE)], DASHES[(k // len(PALETTE)) % len(DASHES)]


WRAP_KINDS = ("revolute", "universal", "planar")   # joints whose angle coordinates wrap


def wrappable_columns(model, layout):
    """q columns that are angles of revolute (incl. URDF continuous), universal and planar joints
    (unit rad). Prismatic, helical (its angle sets its translation), spherical and free joints
    are not wrapped."""
    cols = set()
    for j in model.joints:
        if j.kind in WRAP_KINDS:
            cols.update(c for c in layout.joint_columns(j.name, "q") if layout.units[c] == "rad")
    return cols


def _turns(y):
    """(turn, w): y = w + 2 pi turn with w in (-pi, pi] and turn an integer (as float)."""
    y = np.asarray(y, dtype=float)
    turn = np.ceil((y - np.pi) / (2.0 * np.pi))
    w = y - 2.0 * np.pi * turn
    # rounding at the boundary: move the sample to the neighbouring turn, so turn and w agree
    over, under = w > np.pi, w <= -np.pi
    turn = turn + over - under
    w = np.where(over, w - 2.0 * np.pi, np.where(under, w + 2.0 * np.pi, w))
    return turn, w


def wrap_angle(y):
    """y wrapped into (-pi, pi]."""
    return _turns(y)[1]


def wrap_curve(t, y):
    """(t, y) with y wrapped into (-pi, pi], a NaN point inserted wherever consecutive samples lie
    in different turns, so a curve drawn with connect="finite" has no vertical line at the wrap."""
    turn, w = _turns(y)
    cut = np.nonzero(turn[1:] != turn[:-1])[0] + 1     # NaN turns (gaps) cut too: harmless
    if len(cut) == 0:
        return t, w
    return np.insert(t, cut, t[cut]), np.insert(w, cut, np.nan)


# ---------------------------------------------------------------------- defaults
PREVIEW_TIME = 1.0   # s of motion previewed to rank the joints
PREVIEW_DT = 4e-3    # s: a coarse step is enough to rank (250 compiled RK4 steps, ~0.1 s for 28 dof)


def motion_preview(engine, model, q0, v0, held=(), duration=PREVIEW_TIME, dt=PREVIEW_DT):
    """How far each one-dof joint moves (max - min of q) over the first ``duration`` seconds
    from (q0, v0), all inputs zero, the ``held`` joints prescribed still: the engine's own
    simulator, on a coarse step. Returns {joint name: q over time}, or None when it cannot run."""
    try:
        sim = engine.Simulator(model, dt=dt, integrator="rk4", q=np.asarray(q0, dtype=float),
                               v=None if v0 is None else np.asarray(v0, dtype=float))
        for name in held:
            sim.set_mode(name, "acceleration")
        n = max(1, int(round(duration / dt)))
        rec = (np.empty(n), np.empty((n, model.nq)), np.empty((n, model.nv)), np.empty((n, model.nv)),
               np.empty((n, model.nv)))
        sim.step(n, record=rec)
    except Exception:      # diverged, or a model the simulator refuses: no preview
        return None
    q = rec[1]
    if not np.all(np.isfinite(q)):
        return None
    return {j.name: q[:, j.idx_q] for j in model.joints if j.nq == 1 and j.nv == 1}


def default_channels(engine, model, layout, q0, v0, held=(), max_joints=3):
    """The channels a model opens with: the positions of the (at most ``max_joints``) one-dof
    joints that move most over the first second (``motion_preview``: max - min of q, the held
    joints still; a joint moving as the mirror image of a chosen one is skipped), the height of
    a free floating base that is not held, and the total energy. Joints that stay still are not
    chosen while others move; when nothing moves (a robot at rest in equilibrium), the first two
    free joints. Runs in the calling (GUI) thread at model load: ~0.1 s for the 28-dof humanoid."""
    held = set(held)
    out = []
    root = model.joints[0] if model.joints else None
    if root is not None and root.kind == "free" and root.name not in held:
        out.append(f"q:{root.name}[2]")            # base height (m)
    candidates = [j for j in model.joints if j.nq == 1 and j.nv == 1 and j.name not in held]
    paths = motion_preview(engine, model, q0, v0, held) if candidates else None
    paths = paths or {}
    score = {j.name: float(np.ptp(paths[j.name])) if j.name in paths else 0.0 for j in candidates}
    best = max(score.values(), default=0.0)
    if best > 1e-6:
        chosen = []
        for j in sorted(candidates, key=lambda j: -score[j.name]):
            if len(chosen) == max_joints or score[j.name] <= 0.05 * best:
                break
            # a mirror image of a chosen joint (left and right leg of a symmetric robot) adds nothing
            p = paths[j.name]
            if any(np.allclose(p, s * paths[k.name], atol=1e-6 * score[j.name]) for k in chosen for s in (1, -1)):
                continue
            chosen.append(j)
        chosen.sort(key=lambda j: j.idx_v)        # model order reads better
    else:
        chosen = candidates[:2]
    out += [f"q:{j.name}" for j in chosen]
    out.append("energy:total")
    names = set(layout.names)
    return [n for n in out if n in names]
