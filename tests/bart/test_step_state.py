"""A tree step's mutable state is its declared ``TreeStepState`` (issue 49, item 4): PyMC's
``sampling_state`` taken in the middle of a chain and set again replays the chain exactly,
with the leaf scale learned inside the step, DART's split probabilities, the warm start, the
trees' burn-in and the held iterations all in it."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pymc as pm

import pymc_trees as pmt
from pymc_trees.bart.steps.leaf_scale import LearnedLeafScale
from pymc_trees.bart.steps.split_prior import DartSplitPrior
from pymc_trees.bart.steps.step_state import TreeStepState


def _run(step, point, n, tune_left):
    out = []
    for i in range(n):
        if i == tune_left:
            step.stop_tuning()
        point, stats = step.step(point)
        s = stats[0]
        out.append((point["f"].copy(), s["f_leaf_sd"], s["warm_start"], s["trees_held"],
                    s["f_dart"].probs.copy(), float(s["f_dart"].alpha), s["f_forest"]))
    return out


def test_sampling_state_round_trips_every_part_of_the_step():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(60, 3))
    y = np.sin(4 * X[:, 0]) + 0.3 * rng.normal(size=60)
    with pm.Model() as model:
        f = pmt.BARTTree("f", X, Y=y, m=5)  # leaf_sd="learned", split_prior="dart"
        pm.Normal("y", mu=f, sigma=0.3, observed=y)
        step = pmt.CGMTreeStep([f], warm_start=3, burn_in=6)
    assert isinstance(step.leaf_scale, LearnedLeafScale)
    assert isinstance(step.split_prior, DartSplitPrior)
    names = {f.name for f in fields(TreeStepState)}
    assert {"forest", "leaf_sd", "split_state", "warm_left", "burn_left", "held",
            "steps_left", "tune_sweeps", "tune_moved", "coins"} <= names
    tune = 10
    step.setup_chain(np.random.default_rng(0), tune=tune, draws=10)
    point = model.initial_point()
    point = _run(step, point, 2, tune)[-1][0]
    point = {"f": point}
    state = step.sampling_state
    assert state.warm_left == 1 and state.burn_left == 4
    first = _run(step, dict(point), 14, tune - 2)
    assert any(r[3] for r in first) and any(r[2] for r in first)  # held and warm iterations
    assert len({r[1] for r in first}) > 3  # the learned leaf scale moved
    step.sampling_state = state
    again = _run(step, dict(point), 14, tune - 2)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        np.testing.assert_array_equal(a[4], b[4])
        assert a[5] == b[5]
        # the stored forest, with the coins of the routings the rows leave open
        np.testing.assert_array_equal(a[6].nodes, b[6].nodes)
