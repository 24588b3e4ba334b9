"""Constraints describe their own multiplier rows (label, unit) and residual unit; the sample
layout (plots, CSV columns) takes them from there, never from the constraint's kind."""
import numpy as np
import pytest

import engine
from engine.catalog import load_model
from app.sim.recorder import SampleLayout


@pytest.mark.parametrize("name", ["four_bar", "slider_crank", "five_bar", "closed_chain_leg", "rolling_disk"])
def test_shipped_loops_describe_every_row(name):
    model = load_model(name)
    L = SampleLayout(model)
    for c in model.constraints:
        rows = c.multiplier_rows(model)
        assert len(rows) == c.rows and all(label and unit in ("N", "N·m") for label, unit in rows)
        cols = L.lam_columns[c.name]
        assert [L.units[k] for k in cols] == [u for _, u in rows]
        if c.has_position_rows:
            assert L.units[L.residual_columns[c.name]] == c.residual_unit != ""


def test_a_user_constraint_describes_itself():
    """A subclass the app has never heard of: its own labels and units reach the columns; a
    Pfaffian constraint has no residual column."""
    model = load_model("double_pendulum")

    class Spring(engine.loops.constraints.GearConstraint):
        kind = "my coupling"
        residual_unit = "rad (mine)"

        def multiplier_rows(self, model=None):
            return [("my effort", "N·m")]

    pf = engine.PfaffianConstraint("no_spin", 1, lambda m, q: np.array([[1.0, 0.0]]))
    model.constraints = [Spring("mine", "joint1", "joint2"), pf]
    for c in model.constraints:
        c.bind(model)
    L = SampleLayout(model)
    assert L.lam_labels == ["my effort", "row 0"]
    assert L.units[L.column("lambda:mine")] == "N·m"
    assert L.units[L.column("residual:mine")] == "rad (mine)"
    assert "no_spin" not in L.residual_columns and "residual:no_spin" not in L.names
