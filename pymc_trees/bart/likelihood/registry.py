"""The one registry of the likelihoods in which a tree term's leaves are conjugate, keyed by
the leaf form and the family's name.

* ``("normal", name)``: the families with an exact augmentation for normal leaves
  (:class:`~pymc_trees.bart.likelihood.likelihoods.LikelihoodFamily`, docs/math.md sections 1
  and 8): Normal, Student-t, probit, logit, negative binomial, asymmetric Laplace, and the
  softmax's classes output by output;
* ``("log-gamma", name)``: the families in which log-gamma leaves are conjugate
  (:class:`~pymc_trees.bart.likelihood.gamma_likelihood.GammaFamily`): Poisson,
  zero-inflated Poisson, negative binomial, Gamma, and a Normal's or a Student-t's scale.

An entry answers one small protocol: ``name``, ``leaf_form``, ``accepts(obs)`` (whether the
observed variable ``obs`` is one of its distributions), ``read(obs, inputs, f)`` (the graph
of its eta and its other parameters, or None when the graph is not of its form) and
``forms`` (the lines of the errors that list what is supported).  Everything that lists
families (the errors, the Particle Gibbs refusal, the docs tables, ``leaf_prior="auto"``)
reads them from here through :func:`families`, in the order they were registered (an
observed variable is matched against the entries in that order).

A likelihood outside every entry is not an entry: a term of normal leaves in any other
likelihood gets the general tree step
(:func:`~pymc_trees.bart.likelihood.general_likelihood.general_likelihood`), which takes any
density row by row, so it is keyed by nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["LEAF_FORMS", "REGISTRY", "register", "families", "accepting"]

LEAF_FORMS = ("normal", "log-gamma")

# (leaf form, family name) -> entry, in the order of registration
REGISTRY: dict[tuple[str, str], object] = {}


def register(entry):
    """Add ``entry`` to the registry under ``(entry.leaf_form, entry.name)`` (after the
    others) and return it.  A second entry under the same key, an unknown leaf form, or an
    entry named ``"general"`` (the general step's name, which takes what no entry does) is
    a ``ValueError``."""
    key = (entry.leaf_form, entry.name)
    if entry.leaf_form not in LEAF_FORMS:
        raise ValueError(f"The leaf form of likelihood family {entry.name!r} must be one of "
                         f"{LEAF_FORMS}; got {entry.leaf_form!r}.")
    if key in REGISTRY or entry.name == "general":
        raise ValueError(f"A likelihood family named {entry.name!r} is already registered "
                         f"for {entry.leaf_form} leaves.")
    REGISTRY[key] = entry
    return entry


class Families(Mapping):
    """The entries of one leaf form, by name, in the order of registration: a live view of
    :data:`REGISTRY` (an entry registered later is in it)."""

    def __init__(self, leaf_form: str):
        if leaf_form not in LEAF_FORMS:
            raise ValueError(f"leaf_form must be one of {LEAF_FORMS}; got {leaf_form!r}.")
        self.leaf_form = leaf_form

    def __getitem__(self, name: str):
        try:
            return REGISTRY[(self.leaf_form, name)]
        except KeyError:
            raise KeyError(f"No {self.leaf_form} leaves' likelihood family is named {name!r}; "
                           f"the registered ones are {list(self)}.") from None

    def __iter__(self) -> Iterator[str]:
        return (name for form, name in REGISTRY if form == self.leaf_form)

    def __len__(self) -> int:
        return sum(1 for form, _ in REGISTRY if form == self.leaf_form)

    def __repr__(self) -> str:
        return f"Families({self.leaf_form!r}: {list(self)})"


def families(leaf_form: str) -> Families:
    """The registered families of ``leaf_form`` (``"normal"`` or ``"log-gamma"``) by name."""
    return Families(leaf_form)


def accepting(leaf_form: str, obs) -> list:
    """The entries of ``leaf_form`` whose distributions the observed variable ``obs`` is one
    of, in the order of registration (each is then asked to :meth:`read` it)."""
    return [fam for fam in Families(leaf_form).values() if fam.accepts(obs)]
