"""``BARTTree``: a PyMC random variable whose value is a sum of m regression trees at the rows
of X."""

from __future__ import annotations

import dataclasses
import numbers
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution
from pymc.model import Model
from pytensor.graph.basic import Constant, Variable
from pytensor.tensor.random.op import RandomVariable

from pymc_trees.bart.likelihood.calibration import leaf_calibration
from pymc_trees.bart.likelihood.leaf_choice import settled_leaf_priors
from pymc_trees.bart.samplers.leaf_priors import learned_scale_prior_draw
from pymc_trees.bart.samplers.tree_prior import TreePrior
from pymc_trees.bart.likelihood.term_checks import check_output_scales, check_training_rows, check_Y
from pymc_trees.bart.term.numba_draw import register_numba_draw
from pymc_trees.bart.term.term_data import (categorical_columns, column_names, data_value,
                                            given_names, outputs_of, table_schema)
from pymc_trees.bart.likelihood.model_graph import check_float64
from pymc_trees.bart.term.plan import (DEFAULT_SAMPLER, SAMPLERS, auto_leaf_prior_applies,
                                       check_arguments, term_plan)
from pymc_trees.core.tabular import TableSchema

__all__ = ["BARTTree", "BARTTreeRV", "DEFAULT_SAMPLER", "SAMPLERS", "PPC_ADVICE",
           "KEEP_VALUES_MAX_ROWS", "keeps_values", "tree_terms", "TermInputs", "term_inputs"]

PPC_ADVICE = (
    "Call pmt.sample_posterior_predictive(idata, ...) instead, with the same arguments as "
    "pm.sample_posterior_predictive: it evaluates each posterior draw's own forests at the "
    "current X (after pm.set_data) and draws the likelihood with that draw's other parameters. "
    "PyMC's own function can only copy a tree term's training-row values from the trace or "
    "redraw it from the tree prior; both are wrong at new rows.")

# SAMPLERS and DEFAULT_SAMPLER (the sampler pm.sample() assigns when BARTTree(sampler=None))
# live in pymc_trees.bart.term.plan, which decides what combines with what
# the leaf scale of a term with Y (or a probit or logit link) and no leaf_sd (issue 26)
DEFAULT_LEAF_SD = "learned"
# split_prior by name: equal weights, or DART's learned ones inside the tree step (issue 26)
SPLIT_PRIORS = ("uniform", "dart")
DEFAULT_SPLIT_PRIOR = "dart"

# Above this many training rows a tree term's values are left out of the trace by default
# (2 chains x 1,000 draws x 50,000 rows of float64 = 0.8 GB); its forests are always kept.
KEEP_VALUES_MAX_ROWS = 50_000


def keeps_values(rv) -> bool:
    """Whether ``pm.sample`` keeps the values of tree term ``rv`` at the training rows (its
    ``keep_values``, or by default whether X has at most ``KEEP_VALUES_MAX_ROWS`` rows)."""
    keep = rv.owner.op.keep_values
    if keep is not None:
        return keep
    return int(term_inputs(rv).X.shape[0].eval()) <= KEEP_VALUES_MAX_ROWS


class BARTTreeRV(RandomVariable):
    """RandomVariable Op of a sum-of-trees term.

    Inputs are ``X`` (n, p), the constant ``offset``, the leaf prior sd ``leaf_sd`` and the
    split weights (p,) (a constant, or a Dirichlet variable for DART); the other tree
    hyperparameters are the Op's ``prior`` property.  A draw is a whole forest from the prior
    evaluated at the rows of X.
    """

    name = "BARTTree"
    signature = "(n,p),(),(),(p)->(n)"
    dtype = "floatX"
    _print_name = ("BARTTree", "\\operatorname{BARTTree}")
    __props__ = ("name", "signature", "dtype", "inplace", "prior", "sampler", "columns", "link",
                 "keep_values", "outputs", "schema", "missing")

    def __init__(self, *args, prior: TreePrior = TreePrior(), sampler: str = DEFAULT_SAMPLER,
                 columns: tuple[str, ...] | None = None, link: str | None = None,
                 keep_values: bool | None = None, outputs: int | None = None,
                 schema: TableSchema | None = None, missing: float | None = None, **kwargs):
        self.prior = prior
        self.sampler = sampler
        self.columns = columns
        # kinds and levels of the columns of X (None: all numeric)
        self.schema = schema
        # the value that marks a missing entry of X besides NaN (pm.Data cannot hold NaN)
        self.missing = missing
        self.link = link
        self.keep_values = keep_values
        # None: one value per row, shape (n,); k: k independent sums of trees, shape (k, n)
        self.outputs = outputs
        if outputs is not None:
            kwargs["signature"] = "(n,p),(),(),(p)->(k,n)"
        super().__init__(*args, **kwargs)
        # prior draws in functions compiled with numba (pm.sample_prior_predictive, pm.draw)
        # run rng_fn without numba's object-mode warning
        register_numba_draw(BARTTreeRV)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        shape = param_shapes[0] if param_shapes is not None else dist_params[0].shape
        return (shape[0],) if self.outputs is None else (self.outputs, shape[0])

    def rng_fn(self, rng, X, offset, leaf_sd, split_weights, size):
        # a draw from the tree prior (pm.sample_prior_predictive, pm.draw); PyMC's posterior
        # predictive never gets here: pymc_trees.bart.term.ppc_guard refuses before it would
        n = np.shape(X)[0]
        core = (n,) if self.outputs is None else (self.outputs, n)
        if size is not None and tuple(np.atleast_1d(size)) not in ((), core):
            raise NotImplementedError("BARTTree does not support batched draws (size).")
        out = np.empty((1 if self.outputs is None else self.outputs, n))
        sd = float(leaf_sd)
        if self.prior.learned_scale:  # one leaf scale for every output, from its prior
            sd = learned_scale_prior_draw(rng, sd)
        plan, prior = term_plan(self), self.prior
        if prior.leaf_prior == "auto":  # settled by the model's likelihood, as the step does
            plan, prior = plan.settle_leaf_priors(prior, settled_leaf_priors(self, X))
        shared = plan.shared  # one forest, k values at each leaf
        for j in range(1 if shared else out.shape[0]):
            fs = plan.make_sampler(np.asarray(X), prior, float(offset), sd,
                                   categorical_columns(self), per_output=False, output=j)
            if not prior.dart and prior.split_prior is None:
                # equal, or learned (a Dirichlet draw); DART's come from Linero's prior in
                # draw_prior
                fs.set_split_weights(np.asarray(split_weights, dtype=np.float64))
            fs.prior_values(rng, out if shared else out[j])
        return out[0] if self.outputs is None else out


# the BARTTreeRV settings that rv_op takes after the prior, in dist's order
_OP_SETTINGS = ("sampler", "columns", "link", "keep_values", "outputs", "schema", "missing")


class BARTTree(Distribution):
    r"""Sum of m regression trees evaluated at the rows of X.

    .. math::

        f(x_i) = \text{offset} + \sum_{j=1}^m g(x_i; T_j, M_j)

    with the tree prior of Chipman, George and McCulloch (2010): a node at depth ``d`` splits
    with probability ``alpha * (1 + d) ** -beta``, the split feature is drawn in proportion to
    ``split_prior`` among the features with an available cutpoint, the cutpoint uniformly among
    the available ones, and leaf values are independent ``Normal(0, leaf_sd**2)``.

    Parameters
    ----------
    name : str
        Name of the variable in the model.
    X : array_like, DataFrame or pm.Data of shape (n, p)
        Covariates (at least one row); the value of the variable has shape (n,), or (k, n)
        with ``shape=(k, n)`` or two ``dims`` (several outputs, below).  NaN marks a missing
        value, in any column and any fraction of rows: every split rule also says where
        missing values go (``docs/explanation/prior.md``, "Missing values and categorical
        columns").
        A DataFrame may have numeric, bool, ``category`` and string columns (read by
        :class:`pymc_trees.core.tabular.TableSchema`): unordered categories and strings are split
        by sets of levels, ordered categories like numbers.  Training column names and
        levels are kept (a DataFrame's columns, or the coords of a ``pm.Data``'s second dim)
        so that :func:`pymc_trees.predict` matches DataFrames by name and label.
    Y : array_like of shape (n,) or (k, n), optional
        Third positional argument, as in pymc-bart's ``BART(name, X, Y, m)``: the response on
        the data scale (the observed y, one value per row of X; not ``log(y)`` or another
        transform, whatever the link).  Only calibrates the prior, for ``link``: with the
        identity link ``offset = (max Y + min Y) / 2`` and
        ``leaf_sd = (max Y - min Y) / (2 k sqrt(m))``; the other links transform it
        themselves (:func:`pymc_trees.bart.likelihood.calibration.leaf_calibration`).  It is not the
        likelihood.  For a term of shape (k, n), Y may hold each output's response as a
        row: the term's one offset and leaf scale are then calibrated on all its values,
        and outputs whose own calibrations differ more than 10 times are refused with the
        fix (each output's centre and scale in the model).
    m : int, default 200
        Number of trees (a positive integer).
    alpha, beta : float, default 0.95, 2.0
        Tree-depth prior.
    k : float, default 2.0
        With ``Y``, the prior of f(x) has sd ``(max Y - min Y) / (2 k)``.
    leaf_sd : float, scalar PyMC variable, "learned" or "fixed", optional
        Prior sd of every leaf value.  Default (with ``Y``, or a probit or logit link):
        ``"learned"``, below.  ``"fixed"``: the calibration from ``Y`` (or the link), held
        fixed (this package's default before issue 26).  A number overrides the
        calibration; with it and no ``Y`` the offset is 0 and every leaf is
        ``Normal(0, leaf_sd**2)``.  A scalar
        expression of one free PyMC variable (for example ``pt.sqrt(v)`` with
        ``v = pm.InverseGamma(...)``, or ``s = pm.HalfNormal(...)`` itself) makes the leaf
        scale learned: the tree step samples that variable too, exactly, by slice sampling
        its full conditional given the forest's leaves (``Y`` then sets only the offset).
        ``"learned"`` learns it without a model variable: ``leaf_sd**2 ~ InverseGamma(3,
        2 sd0**2)`` with ``sd0`` the calibration (from ``Y``, which the identity and log
        links then require; the probit and logit links have one without it), drawn by the tree
        step from its conjugate conditional after every sweep and recorded in the sample
        stat ``leaf_sd`` (the same prior as that model variable).  Chosen as the default by
        Friedman #1 and the real-table suite (``docs/benchmarks/suite.md``): lower held-out
        error and, at 10,000 rows, 95% intervals of f that cover.
    numcut : int, default 100
        Maximum number of cutpoints per feature (midpoints between distinct values, thinned
        to evenly spaced empirical quantiles when there are more).
    min_leaf : int, default 5
        A cutpoint is available at a node when it leaves at least ``min_leaf`` training rows
        on each side; the same rule governs every sampler and prior draws.
    split_prior : {"dart", "uniform"}, array_like of shape (p,) or PyMC Dirichlet variable, optional
        How nodes choose the column they split on.  ``"dart"`` (the default,
        ``DEFAULT_SPLIT_PRIOR``): DART (Linero 2018) inside the tree step, split probabilities
        ``s ~ Dirichlet(alpha / p)`` with ``alpha / (alpha + p) ~ Beta(0.5, 1)``, both drawn
        exactly given the forest after every sweep, kept as the sampler stats
        ``<name>_split_probs`` (chain, draw, ``<name>_column``) and ``<name>_split_alpha``
        (``docs/explanation/leaf-scale-and-split-prior.md``, "DART inside the tree step";
        ``docs/benchmarks/suite.md`` for what it gains and costs).  ``"uniform"``: equal
        probabilities (CGM's prior).  Weights of
        shape (p,): fixed relative probabilities.  A ``pm.Dirichlet`` variable of shape
        (p,): learned split probabilities as a model variable, which the tree step samples
        exactly given the forest's splits (``docs/explanation/leaf-scale-and-split-prior.md``,
        "Learned split probabilities"); its concentration may itself be a model variable.
    link : {"identity", "probit", "logit", "log"}, optional
        The link through which the term enters its likelihood, which sets the calibration:
        probit ``offset = Phi^-1(mean Y)``, ``leaf_sd = 3 / (k sqrt(m))``; logit
        ``offset = logit(mean Y)``, ``leaf_sd = 1.702 * 3 / (k sqrt(m))``; log
        ``offset = log(mean Y)``, ``leaf_sd = log((max Y + .5) / (min Y + .5)) / (2 k sqrt(m))``.
        Default: ``"identity"`` when ``Y`` is given, otherwise none (the term is then not
        tied to a link).  ``pm.sample`` refuses a term whose link differs from its
        likelihood's.
    sampler : {"cgm", "pg"}, optional
        The tree step ``pm.sample()`` assigns: :class:`~pymc_trees.CGMTreeStep` or
        :class:`~pymc_trees.PGTreeStep` (default: ``DEFAULT_SAMPLER``, chosen by the mixing
        benchmark).  Either can also be passed explicitly with ``pm.sample(step=...)``.
    categorical : sequence of int or str, boolean array of shape (p,), or TableSchema, optional
        Columns of a numeric X (array or ``pm.Data``) that hold integer level codes
        ``0, 1, ...`` to be split by sets of levels.  A
        :class:`~pymc_trees.core.tabular.TableSchema`
        says that X holds its encoding (``schema.encode(df)``): the way to put categorical
        columns in a ``pm.Data`` and change them with ``pm.set_data``.  A DataFrame's
        categorical columns are read from its dtypes.  At most 31 levels per column (a
        missing value counts as one more).
    missing : float, optional
        A number that marks a missing entry of X besides NaN, as XGBoost's ``missing``:
        ``pm.Data`` cannot hold NaN (PyMC refuses it), so for a ``pm.Data`` X with gaps put
        this value in them (``np.where(np.isnan(Xc), -999.0, Xc)``) and pass
        ``missing=-999.0``.  Wherever the term reads X (training, ``pm.set_data``,
        :func:`pymc_trees.predict`) it is read as NaN.
    columns : sequence of str, optional
        Names of the columns of X, when X does not carry them: a ``pm.Data`` keeps no
        DataFrame's column names (give them here, ``columns=df.columns``, or as the coords of
        the ``pm.Data``'s second dim: ``pm.Model(coords={"column": df.columns})`` and
        ``pm.Data("X", df, dims=("obs", "column"))``).  With
        names, :func:`pymc_trees.predict` and :mod:`pymc_trees.interpret` match a DataFrame's
        columns by name; without, they read a DataFrame by position, with a ``UserWarning``
        (its names cannot be checked), and refuse one whose labels are the positions
        ``0 .. p-1`` in another order (an array is read by position).  A DataFrame X has its
        own names; a different ``columns`` is refused.
    missing_split : bool, default True
        Whether a numeric column with missing values also offers BARTm's "is missing" splits
        (its missing rows against all others, either way round); without them every rule
        sends the missing rows with one side of a cut between values.
    keep_values : bool, optional
        Whether ``pm.sample`` keeps the term's values at the training rows (n numbers per
        draw) in the trace.  Default: kept when X has at most ``KEEP_VALUES_MAX_ROWS``
        (50,000) rows, left out above (at a million rows they would take 16 GB for 2 x 1,000
        draws).  The forests are kept either way, so ``pmt.predict(idata, X)`` rebuilds the
        values at the training rows for every draw, exactly, and predictions, the posterior
        predictive and saving work the same.  ``pm.sample(var_names=...)`` decides instead
        when given.  A term whose values are recorded has them summed tree by tree in every
        draw, the numbers ``pmt.predict`` gives to the last bit; one whose values are not
        has them, during sampling, as the pseudo-data minus the sampler's residual, equal
        up to rounding (of the order of 1e-14 relative) and cheaper (a sixth of a sweep at a million
        rows).
    response : {"constant", "linear", "mix"} or None, default None
        What each leaf holds.  None (the default): linear leaves for a term of one output
        calibrated on ``Y`` for the identity (no ``link``), ``"logit"`` or ``"probit"`` link,
        and sampled by the CGM step in a Gaussian likelihood or one augmented to it
        (Student-t, Bernoulli with a logit or probit link, ...); constant leaves otherwise (a
        ``"log"`` link, a term without ``Y``, several outputs, Particle Gibbs, a likelihood
        that needs the general tree step, or ``move_probs`` given to the step, which are
        moves of constant leaves).  On the fifteen real tables of ``benchmarks/suite.py``
        (Normal regression and logit classification) linear leaves gave a median error 0.997
        of constant leaves', worse on none beyond two SEs, at 0.84 to 2.2 times the time
        (``docs/benchmarks/suite.md``, "Linear leaves against constant leaves"); name
        ``"constant"`` for the plain BART posterior the peers sample.  ``"linear"`` (pymc-bart's ``response="linear"``): a leaf
        under a split on a non-categorical column ``j`` holds the line ``b0 + b1 z_j(x)``,
        ``z_j`` the column standardised on the training rows (a missing value at its mean),
        with ``b0, b1 ~ Normal(0, leaf_sd**2 / 2)``; the root of a one-leaf tree and a leaf
        under a categorical split hold ``b0 ~ Normal(0, leaf_sd**2)`` (at a typical training
        row a leaf has the prior variance of a constant leaf).  The coefficients are
        integrated out of the tree moves and drawn from their conditional, as constant leaves
        are; the CGM step samples such trees with grow and prune moves, for Gaussian and
        augmented likelihoods (``docs/explanation/linear-leaves.md``, "Linear leaves").
        ``"mix"``
        (pymc-bart's): each tree's leaves are all linear or all constant, the kind a
        parameter of the tree with prior 1/2 each, drawn exactly given the tree after its
        move.  Particle Gibbs and the general tree step (other likelihoods) are refused.
    separate_trees : bool, default True
        For a term of shape (k, n): k independent forests (True), or one forest of m trees
        whose every leaf holds k values, independent ``Normal(0, leaf_sd**2)`` (False;
        pymc-bart's default form for ``shape=(k, n)``).  Shared trees are sampled by the
        general tree step over the joint likelihood of the k outputs at each row, for any
        likelihood (a structural move proposes the k values of each new leaf and is
        accepted with the exact log-likelihood); no warm start, no Particle Gibbs, constant
        leaves only (``docs/explanation/general-step.md``, "Outputs that share their
        trees").  With k = 1 the two forms are the same term (one forest).
    leaf_prior : {"auto", "normal", "log-gamma", "log-inverse-gamma"}, default "auto"
        The leaf values' prior.  ``"normal"``: ``Normal(0, leaf_sd**2)``.  ``"log-gamma"``:
        every leaf's ``exp(value)`` is ``Gamma(c, rate d)``, so each tree multiplies
        ``exp(f)`` by a Gamma factor (Murray 2021); ``"log-inverse-gamma"``: by an
        inverse-gamma one (Pratola et al. 2020's variance trees).  ``c`` and ``d`` give each
        leaf the normal prior's mean 0 and sd ``leaf_sd``.  For a term that enters a Poisson
        or negative binomial mean, a Gamma outcome's rate or mean, or a Normal or Student-t
        variance through ``exp`` in the conjugate direction, the leaves then integrate out of
        the tree moves in closed form (:mod:`pymc_trees.bart.likelihood.gamma_likelihood` lists the
        forms; any other is refused with them).  One output (``"auto"`` settles each output
        of a (k, n) term), constant leaves, a leaf scale that is a number, ``"fixed"`` or
        ``"learned"`` (not a model variable); the CGM step or Particle Gibbs.
        ``"auto"`` settles when the tree step reads the likelihood: log-gamma leaves in the
        direction the likelihood is conjugate in for a Poisson, zero-inflated Poisson or
        negative binomial mean ``exp(a + f)`` (with an exposure; the negative binomial by
        its Gamma-Poisson mixture), a Gamma outcome's mean and a Normal's or Student-t's log
        variance (``sigma = exp(g / 2)``, ``sqrt(exp(g))``, ``tau = exp(-g)``; ``sigma =
        exp(g)`` with every leaf's ``exp(-2 value)`` Gamma), where they measured 2.4 to 5.8
        times the effective draws of f a second of normal leaves at the same held-out
        density (``docs/explanation/log-gamma-leaves.md``, "Which prior a model gets"); each
        output of a term of shape (k, n) with trees of its own by its likelihood (``Normal(w[0],
        pm.math.exp(w[1]))``: w[1]); normal leaves everywhere else.
        ``pm.sample_prior_predictive`` draws the prior the step samples (it settles the same
        way); the step's ``leaf_prior`` says which.
    **kwargs
        Passed to :class:`pymc.Distribution` (for example ``dims``).  ``shape``, ``size`` or
        ``dims`` must describe one value per row of X, ``(n,)``, or k per row, ``(k, n)``:
        then the term is k independent sums of m trees over the same X (one prior, offset
        and leaf scale; ``Y`` calibrates every output alike, so put each output's centre and
        scale in the model when the outputs live on different scales, ``mu_j = c_j + s_j *
        f[j]``: a warning names outputs of Normal likelihoods that differ 10 times), for
        example the logits of
        ``pm.Categorical(p=pm.math.softmax(f, axis=0).T)`` or the mean and log scale of one
        likelihood (``f[0]``, ``f[1]``).  Such a term is sampled one output at a time given
        the others: an output that is a linear predictor of an augmentable likelihood given
        the others (a Normal mean, a quantile, a softmax class) by the conjugate update,
        any other by the general tree step of :class:`~pymc_trees.CGMTreeStep`
        (``sampler="pg"`` is refused for those when the step is built; learned split
        probabilities are refused).  With ``separate_trees=False`` the k outputs share
        one forest instead (below).
        ``initval`` is refused (every tree starts as a single leaf).

    Notes
    -----
    ``pm.sample()`` assigns the tree step chosen by ``sampler`` to this variable (one step per
    term when a model has several).  A term that no observed variable, other free variable or
    potential depends on (alone in the model, or in a Deterministic only) is drawn from its
    prior by that step.  The forests of every draw are kept in the DataTree group
    ``forests`` (numeric arrays, saved by ``to_netcdf`` / ``to_zarr``);
    :func:`pymc_trees.predict` evaluates them at new rows, and after ``pm.set_data``
    :func:`pymc_trees.sample_posterior_predictive` gives predictions through PyMC's API.

    Examples
    --------
    >>> import pymc as pm
    >>> import pymc_trees as pmt
    >>> from pymc_trees.comparison.datasets import friedman1
    >>> X, y, _ = friedman1(300, rng=1)
    >>> with pm.Model():
    ...     f = pmt.BARTTree("f", X, Y=y, m=50)            # f.shape == (300,)
    ...     sigma2 = pm.InverseGamma("sigma2", *pmt.noise_prior(X, y))
    ...     obs = pm.Normal("y", mu=f, sigma=pm.math.sqrt(sigma2), observed=y)
    ...     idata = pm.sample(random_seed=1)               # f: CGMTreeStep, sigma2: NoiseGibbs
    ...     idata_pg = pm.sample(step=[pmt.PGTreeStep([f])], random_seed=1)  # Particle Gibbs
    """

    rv_type = BARTTreeRV

    def __new__(cls, name: str, X, Y=None, m: int = 200, alpha: float = 0.95,
                beta: float = 2.0, k: float = 2.0, leaf_sd: float | str | Variable | None = None,
                numcut: int = 100, min_leaf: int = 5, split_prior=None,
                sampler: str | None = None, link: str | None = None,
                keep_values: bool | None = None, categorical=None, missing: float | None = None,
                missing_split: bool = True, columns=None, response: str | None = None,
                separate_trees: bool = True, leaf_prior: str = "auto", **kwargs):
        if kwargs.get("initval") is not None:
            raise ValueError(f"BARTTree {name!r} does not take an initval: every tree starts "
                             "as a single leaf (f = offset) and the tree step moves from there. "
                             "Remove initval.")
        model = Model.get_context(error_if_none=False)
        columns = column_names(X, model) if columns is None else given_names(columns)
        schema, X = table_schema(X, categorical, columns, missing)
        rv = super().__new__(cls, name, X, Y=Y, m=m, alpha=alpha, beta=beta, k=k,
                             leaf_sd=leaf_sd, numcut=numcut, min_leaf=min_leaf,
                             split_prior=split_prior, sampler=sampler, columns=columns,
                             link=link, keep_values=keep_values, categorical=schema,
                             missing=missing, missing_split=missing_split, response=response,
                             separate_trees=separate_trees, leaf_prior=leaf_prior, **kwargs)
        return rv

    @classmethod
    def dist(cls, X, Y=None, m: int = 200, alpha: float = 0.95, beta: float = 2.0,
             k: float = 2.0, leaf_sd: float | str | Variable | None = None, numcut: int = 100,
             min_leaf: int = 5, split_prior=None, sampler: str | None = None,
             columns: tuple[str, ...] | None = None, link: str | None = None,
             keep_values: bool | None = None, categorical=None, missing: float | None = None,
             missing_split: bool = True, response: str | None = None,
             separate_trees: bool = True, leaf_prior: str = "auto", **kwargs):
        check_float64()
        if not isinstance(missing_split, (bool, np.bool_)):
            raise ValueError(f"missing_split must be True or False; got {missing_split!r}.")
        if missing is not None:
            if isinstance(missing, bool) or not isinstance(missing, numbers.Real) \
                    or not np.isfinite(missing):
                raise ValueError(f"missing must be a finite number that marks missing entries "
                                 f"of X (NaN always does); got {missing!r}.")
            missing = float(missing)
        columns = column_names(X, None) if columns is None else given_names(columns)
        schema, X = table_schema(X, categorical, columns, missing)
        columns = schema.names if schema.named else None
        if keep_values is not None and not isinstance(keep_values, (bool, np.bool_)):
            raise ValueError(f"keep_values must be True, False or None (kept up to "
                             f"{KEEP_VALUES_MAX_ROWS:,} rows); got {keep_values!r}.")
        X = pt.as_tensor_variable(X)
        if X.ndim != 2:
            raise ValueError(f"X must be a matrix of shape (n, p); got {X.ndim} dimension(s). "
                             "Reshape a single feature with X[:, None].")
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
            raise ValueError(f"m (the number of trees) must be a positive integer; got {m!r}.")
        if isinstance(min_leaf, bool) or not isinstance(min_leaf, numbers.Integral):
            raise ValueError(f"min_leaf must be a positive integer; got {min_leaf!r}.")
        X_value = schema.encode(data_value(X, missing), what="X")  # checks a pm.Data's codes
        check_training_rows(X_value, int(min_leaf), schema)
        outputs = None
        for key in ("shape", "size"):
            j = outputs_of(key, kwargs.get(key), X_value.shape[0])
            outputs = j if j is not None else outputs
        check_Y(Y, X_value.shape[0], link, outputs)
        if link is None and Y is not None:
            link = "identity"
        if leaf_sd is None and (Y is not None or link in ("probit", "logit")):
            leaf_sd = DEFAULT_LEAF_SD
        internal = False
        if isinstance(leaf_sd, str):
            if leaf_sd not in ("learned", "fixed"):
                raise ValueError(f"leaf_sd must be a positive number, a scalar PyMC variable, "
                                 f"\"learned\" or \"fixed\"; got {leaf_sd!r}.")
            internal = leaf_sd == "learned"
            if internal and Y is None and link not in ("probit", "logit"):
                raise ValueError(
                    "leaf_sd=\"learned\" centres the learned leaf scale's prior on the "
                    "calibration from Y; pass Y (the response on the data scale), or give "
                    "the leaf scale as a PyMC variable (leaf_sd=pt.sqrt(v) with "
                    "v = pm.InverseGamma(...)).")
            leaf_sd = None  # the calibration: held fixed, or the learned scale's centre
        if isinstance(leaf_sd, Constant):
            leaf_sd = leaf_sd.data  # a number given as a PyTensor constant
        learned = isinstance(leaf_sd, Variable)
        if learned:
            # a leaf scale that is a model variable: sampled with the trees by the tree step
            if leaf_sd.ndim != 0:
                raise ValueError(f"leaf_sd must be a scalar; got a tensor of {leaf_sd.ndim} "
                                 "dimension(s). Pass one PyMC variable for all the leaves.")
            if Y is not None:
                offset, _ = leaf_calibration(Y, k=k, m=m,
                                             link="identity" if link is None else link)
            else:
                offset = 0.0
            sd = leaf_sd
        else:
            offset, sd = leaf_calibration(Y, leaf_sd=leaf_sd, k=k, m=m,
                                          link="identity" if link is None else link)
        if np.ndim(Y) == 2:
            check_output_scales(Y, k, m, "identity" if link is None else link)
        p = X_value.shape[1]
        dart = False
        if split_prior is None:
            split_prior = DEFAULT_SPLIT_PRIOR
        if isinstance(split_prior, str):
            if split_prior not in SPLIT_PRIORS:
                raise ValueError(f"split_prior must be weights of shape (p,), a pm.Dirichlet "
                                 f"variable, or one of {SPLIT_PRIORS}; got {split_prior!r}.")
            dart = split_prior == "dart"
            split_prior = None
        if isinstance(split_prior, Variable) and not isinstance(split_prior, Constant):
            # learned split probabilities (DART): a Dirichlet variable the tree step samples
            if split_prior.ndim != 1:
                raise ValueError(f"split_prior must be a vector of length p = {p} (a "
                                 f"pm.Dirichlet variable); got {split_prior.ndim} dimension(s).")
            length = split_prior.type.shape[0]
            if length is not None and length != p:
                raise ValueError(f"split_prior has length {length} but X has p = {p} columns; "
                                 f"give the Dirichlet a = a vector of length {p}.")
            sp = None
            weights = split_prior
        else:
            sp = None if split_prior is None else tuple(float(w) for w in np.ravel(split_prior))
            weights = None
        # the default leaves: linear for a term of one output calibrated on Y for the
        # identity, logit or probit link and sampled by the CGM step; the step keeps them
        # only in a Gaussian or augmented likelihood (pymc_trees.bart.term.plan.TermPlan.resolve)
        auto = response is None
        if auto:
            linear = (Y is not None and link in ("identity", "logit", "probit")
                      and outputs is None and sampler in (None, "cgm")
                      and leaf_prior in ("normal", "auto"))
            response = "linear" if linear else "constant"
        # what combines with what (pymc_trees.bart.term.plan): refused here with the fix
        sampler, separate = check_arguments(
            outputs=outputs, response=response, separate_trees=separate_trees, sampler=sampler,
            learned_split=isinstance(weights, Variable) and not isinstance(weights, Constant),
            leaf_prior=leaf_prior, learned_scale=learned)
        if leaf_prior == "auto" and not auto_leaf_prior_applies(outputs, response, auto,
                                                                learned, separate):
            leaf_prior = "normal"  # no likelihood makes log-gamma leaves serve this term
        prior = TreePrior(m=int(m), alpha=float(alpha), beta=float(beta), numcut=int(numcut),
                          min_leaf=int(min_leaf), split_prior=sp,
                          missing_split=bool(missing_split), learned_scale=internal,
                          dart=dart, response=response, separate_trees=separate,
                          response_auto=auto and response == "linear", leaf_prior=leaf_prior)
        if weights is None:
            weights = prior.split_weights(p)
        keep = None if keep_values is None else bool(keep_values)
        plain = schema if any(kd != "numeric" for kd in schema.kinds) else None
        return super().dist([X, offset, sd, weights, prior, sampler, columns, link, keep,
                             outputs, plain, missing], **kwargs)

    @classmethod
    def rv_op(cls, X, offset, leaf_sd, split_weights, prior, *settings, size=None, rng=None):
        """The term's random variable: ``dist``'s parameters in its order, the Op's
        ``settings`` after the prior (``sampler, columns, link, keep_values, outputs,
        schema, missing``, each optional from the right)."""
        if len(settings) > len(_OP_SETTINGS):
            raise TypeError(f"BARTTree.rv_op takes at most {len(_OP_SETTINGS)} settings after "
                            f"the prior ({', '.join(_OP_SETTINGS)}); got {len(settings)}.")
        op = BARTTreeRV(prior=prior, **{"sampler": DEFAULT_SAMPLER,
                                        **dict(zip(_OP_SETTINGS, settings))})
        if rng is None:
            rng = pt.random.shared_rng(seed=None)
        sd = (pt.as_tensor_variable(leaf_sd, dtype="floatX") if isinstance(leaf_sd, Variable)
              else float(leaf_sd))
        w = (pt.as_tensor_variable(split_weights, dtype="floatX")
             if isinstance(split_weights, Variable)
             else np.asarray(split_weights, dtype=np.float64))
        return op(X, float(offset), sd, w, size=size, rng=rng, return_next_rng=True)[1]

    @staticmethod
    def support_point(rv, *args):
        # called as (rv, size, *params) or (rv, *params)
        X, offset, _, _ = args[-4:]
        k = rv.owner.op.outputs
        return pt.zeros((X.shape[0],) if k is None else (k, X.shape[0])) + offset

    @staticmethod
    def logp(value, X, offset, leaf_sd, split_weights):
        # The tree prior is a distribution over forests, not a density on f; the tree steps
        # sample it exactly and every other step sees f as fixed.  Contributing 0 keeps the
        # model log density of all other variables correct.
        # That 0 is a function of the value which PyTensor cannot fold away (-inf if the
        # first entry were NaN, which a sum of trees never is; one entry, so O(1) in NUTS's
        # compiled density).  PyMC's step assignment differentiates the model's log density
        # in every free variable: with zeros_like(value) a term that nothing else depends
        # on was disconnected (pytensor's DisconnectedInputError).  And NUTS's function of
        # the other variables, given the term's value, refuses that given once its rewritten
        # graph has lost it, as 0 * value would be.
        first = value[(0,) * value.ndim]
        return pt.zeros_like(value) + pt.switch(pt.isnan(first), -np.inf, 0.0)


def tree_terms(model) -> list:
    """The BARTTree variables of a model, in the order of ``model.free_RVs``."""
    return [rv for rv in model.free_RVs if isinstance(rv.owner.op, BARTTreeRV)]


class TermInputs(NamedTuple):
    """The graph inputs of a tree term, by name: the parameters of
    :meth:`BARTTreeRV.rng_fn` in their order, then the Op's random generator and size.

    X : TensorVariable (n, p)
        The rows (a ``pm.Data`` or a constant).
    offset : TensorVariable ()
        The constant offset every tree's sum starts from.
    leaf_sd : TensorVariable ()
        The leaf prior sd: a constant, or an expression of one free variable (a learned
        leaf scale, sampled by the tree step).
    split_weights : TensorVariable (p,)
        The split weights: a constant, or a ``pm.Dirichlet`` variable (learned split
        probabilities).
    rng, size : TensorVariable
        The generator and the size of the RandomVariable node.
    """

    X: Variable
    offset: Variable
    leaf_sd: Variable
    split_weights: Variable
    rng: Variable
    size: Variable


def term_inputs(rv) -> TermInputs:
    """The graph inputs of the tree term ``rv`` by name (:class:`TermInputs`): the one reader
    of a term's inputs in the package (``tests/test_layout.py`` holds every other module to
    it), so that a change in the order of ``BARTTreeRV``'s inputs is made here alone."""
    node = getattr(rv, "owner", None)
    if node is None or not isinstance(node.op, BARTTreeRV):
        raise TypeError(f"term_inputs takes a BARTTree variable (the value of "
                        f"pmt.BARTTree(...)); got {rv!r}.")
    op = node.op
    X, offset, leaf_sd, split_weights = op.dist_params(node)
    return TermInputs(X, offset, leaf_sd, split_weights, op.rng_param(node),
                      op.size_param(node))
