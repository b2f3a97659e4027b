"""The likelihood registry (pymc_trees.bart.likelihood.likelihoods): one entry per family, the docs'
table and the errors' list generated from it, every family matched in a model's graph by its
entry, and its pseudo-data drawn by its entry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymc as pm
import pytest

from pymc_trees.bart.likelihood.calibration import LINKS, leaf_calibration
from pymc_trees.bart.likelihood.likelihoods import (FAMILIES, LIKELIHOOD_FORMS, forms_table,
                                                    LikelihoodFamily, tree_supported)
from pymc_trees.bart.likelihood.structure import NotAugmentable, tree_likelihood

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "explanation" / "augmentations.md"
BEGIN = "<!-- generated from the likelihood registry"
END = "<!-- end of the generated table -->"


def test_the_docs_table_of_likelihoods_is_the_registrys():
    text = DESIGN.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    block = text[text.index(BEGIN):text.index(END)]
    table = block[block.index("-->\n") + 4:]
    assert table == forms_table(), (
        "docs/explanation/augmentations.md's likelihood table differs from the registry; paste "
        "pymc_trees.bart.likelihood.likelihoods.forms_table() between its markers")
    assert len(table.strip().splitlines()) == 2 + len(FAMILIES)


def test_the_docs_table_of_log_gamma_forms_is_the_registrys():
    from pymc_trees.bart.likelihood.gamma_likelihood import GAMMA_FAMILIES, gamma_forms_table

    text = (DESIGN.parent / "log-gamma-leaves.md").read_text()
    begin = "<!-- generated from the log-gamma registry"
    assert text.count(begin) == 1
    block = text[text.index(begin):]
    block = block[:block.index(END)]
    table = block[block.index("-->\n") + 4:]
    assert table == gamma_forms_table(), (
        "docs/explanation/log-gamma-leaves.md's table of forms differs from the registry; "
        "paste pymc_trees.bart.likelihood.gamma_likelihood.gamma_forms_table() between its "
        "markers")
    assert len(table.strip().splitlines()) == 2 + len(GAMMA_FAMILIES)


def test_the_errors_list_every_form_of_every_family():
    text = tree_supported()
    for fam in FAMILIES.values():
        for form in fam.forms:
            assert f"  - {form}\n" in text
        for par in fam.parameters:
            assert par in text
    assert len(LIKELIHOOD_FORMS) == sum(len(f.forms) for f in FAMILIES.values())


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_has_a_link_and_its_calibration(name):
    fam = FAMILIES[name]
    assert fam.link in LINKS
    Y = np.array([0.0, 1.0, 1.0, 0.0, 1.0]) if fam.link in ("probit", "logit") else \
        np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    assert fam.calibration(Y, k=2.0, m=50) == leaf_calibration(Y, k=2.0, m=50, link=fam.link)


def test_a_family_is_refused_without_exactly_one_pseudo_data_rule():
    base = dict(name="toy", distributions=(pm.Normal,), link="identity",
                read=lambda obs, inputs, f: None, forms=(), parameters=(), doc_form="",
                doc_latent="", doc_zw="")
    with pytest.raises(ValueError, match="exactly one"):
        LikelihoodFamily(**base)
    with pytest.raises(ValueError, match="link"):
        LikelihoodFamily(**{**base, "link": "cloglog", "gaussian": lambda y, p: (y, p)})


def _model(name, rng):
    X = rng.normal(size=(30, 2))
    y01 = (rng.random(30) < 0.5).astype(float)
    counts = rng.poisson(3.0, 30).astype(float)
    import pymc_trees as pmt

    with pm.Model() as model:
        f = pmt.BARTTree("f", X, m=3, leaf_sd=0.5, leaf_prior="normal")  # the augmentation
        if name == "normal":
            pm.Normal("y", f, 1.0, observed=rng.normal(size=30))
        elif name == "student_t":
            pm.StudentT("y", nu=4.0, mu=f, sigma=1.0, observed=rng.normal(size=30))
        elif name == "probit":
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=y01)
        elif name == "logit":
            pm.Binomial("y", n=5, logit_p=f, observed=np.minimum(counts, 5))
        elif name == "negative_binomial":
            pm.NegativeBinomial("y", mu=pm.math.exp(f), alpha=2.0, observed=counts)
        else:
            assert name == "asymmetric_laplace", f"write a model of the family {name!r} here"
            pm.AsymmetricLaplace("y", mu=f, b=1.0, q=0.3, observed=rng.normal(size=30))
    return model, f


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if f.given_others is None])
def test_every_family_is_matched_and_draws_its_pseudo_data_by_its_entry(name):
    rng = np.random.default_rng(0)
    model, f = _model(name, rng)
    lik = tree_likelihood(model, f, 30)
    fam = FAMILIES[name]
    assert (lik.family, lik.link, lik.draws_latents) == (name, fam.link, fam.draws_latents)
    calls = []
    rule = "latents" if fam.draws_latents else "gaussian"
    inner = getattr(fam, rule)
    # the entry is frozen: its rule swapped for a counting one, and put back
    object.__setattr__(fam, rule, lambda *a: calls.append(1) or inner(*a))
    try:
        lik.reset()
        z, omega = lik.pseudo_data(model.initial_point(), 0.0, np.zeros(30),
                                   np.random.default_rng(1))
    finally:
        object.__setattr__(fam, rule, inner)
    assert calls == [1]
    assert z.shape == omega.shape == (30,) and np.all(np.isfinite(z)) and np.all(omega > 0)


def test_a_form_no_entry_reads_is_refused_with_the_list():
    rng = np.random.default_rng(0)
    import pymc_trees as pmt

    with pm.Model() as model:
        f = pmt.BARTTree("f", rng.normal(size=(30, 2)), m=3, leaf_sd=0.5, leaf_prior="normal")
        pm.Poisson("y", pm.math.exp(f), observed=rng.poisson(2.0, 30))
    with pytest.raises(NotAugmentable, match="Poisson likelihood, which has no exact") as err:
        tree_likelihood(model, f, 30)
    assert tree_supported() in str(err.value)


def test_one_registry_holds_both_leaf_forms_and_refuses_a_second_entry_of_a_key():
    from pymc_trees.bart.likelihood import registry
    from pymc_trees.bart.likelihood.gamma_likelihood import GAMMA_FAMILIES

    keys = list(registry.REGISTRY)
    assert [name for form, name in keys if form == "normal"] == list(FAMILIES)
    assert [name for form, name in keys if form == "log-gamma"] == list(GAMMA_FAMILIES)
    assert len(keys) == len(FAMILIES) + len(GAMMA_FAMILIES)
    # the same name under two leaf forms is two entries; twice under one is refused
    assert FAMILIES["normal"] is not GAMMA_FAMILIES["normal"]
    with pytest.raises(ValueError, match="already registered"):
        registry.register(FAMILIES["probit"])
    with pytest.raises(KeyError, match="registered ones"):
        GAMMA_FAMILIES["probit"]
    # the views are live: an entry registered later is in them, in order
    toy = LikelihoodFamily(name="toy", distributions=(pm.Normal,), link="identity",
                           read=lambda obs, inputs, f: None, forms=("y ~ Toy(eta)",),
                           parameters=(), doc_form="", doc_latent="", doc_zw="",
                           gaussian=lambda y, p: (y, 1.0))
    registry.register(toy)
    try:
        assert list(FAMILIES)[-1] == "toy" and "toy" not in GAMMA_FAMILIES
    finally:
        del registry.REGISTRY[("normal", "toy")]
    assert "toy" not in FAMILIES


def test_a_softmax_is_read_output_by_output_and_refused_for_a_term_of_one_output():
    from pymc_trees.bart.likelihood.structure import output_tree_likelihood
    import pymc_trees as pmt

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    y = rng.integers(0, 3, 40)
    with pm.Model() as model:
        w = pmt.BARTTree("w", X, m=3, shape=(3, 40), leaf_sd=0.5, leaf_prior="normal")
        pm.Categorical("y", p=pm.math.softmax(w, axis=0).T, observed=y)
    lik = output_tree_likelihood(model, w, 40, 1)
    assert (lik.family, lik.link, lik.draws_latents) == ("softmax", "logit", True)
    yj, a, b, trials = lik.pieces(model.initial_point())
    np.testing.assert_array_equal(yj, (y == 1).astype(float))
    with pm.Model() as one:
        f = pmt.BARTTree("f", X, m=3, leaf_sd=0.5, leaf_prior="normal")
        logits = pm.math.stack([f, 0.0 * f, -f])
        pm.Categorical("y", p=pm.math.softmax(logits, axis=0).T, observed=y)
    with pytest.raises(NotAugmentable, match=r"takes a term of shape \(k, n\) output by output"):
        tree_likelihood(one, f, 40)
