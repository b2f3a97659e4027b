"""BART's numba kernels: the mutable forest, node rules, the prior, and one module per tree
update.  Arrays in and out, the rng passed in, nothing of PyMC.

- ``forest``: the forest's arrays (``Forest``, and ``ForestArrays``, their view for a kernel);
  ``bundles``: the other named bundles a kernel takes (``SweepData``, ``TreeRules``,
  ``SweepScratch``); ``nodes``: rules, availability, leaf draws; ``prior``: prior trees.
- ``tree_edit``: editing a packed tree (node classes, a grow's proposal, partitions, the
  children's and a subtree's available rules, the commits), shared by every sweep;
  ``row_sums``: the conjugate sweep's passes over the rows and leaf sums.
- One module per tree update: ``cgm`` (Chipman-George-McCulloch moves, constant leaves,
  conjugate), ``linear`` (linear leaves, conjugate), ``general`` (any likelihood: Newton
  leaf proposals, ``newton``, through a row callback, ``row_calls``), ``general_linear``
  (linear leaves, any likelihood), ``pg`` (Particle Gibbs), ``gfr`` (grow-from-root warm
  start); ``augment``: data augmentation.

Every sweep and move kernel takes the bundles (``SweepData``, ``TreeRules``, ``ForestArrays``,
``SweepScratch``, and its own: ``RowState``/``RowBuffers``, ``LinearRows``/``LinearSums``,
``PGBuffers``, ``GFRScratch``) and unpacks the fields it reads (numba passes a named tuple of
arrays as one argument, at no cost).

**The four versions of a move.**  Grow, prune and change (and swap) are written in
``cgm``, ``linear``, ``general`` and ``general_linear``; the shared-output sweep is
``general`` with J outputs.  Their structural part is already one (``tree_edit``: the node
picked, the rule drawn from the prior, the partition, the availability, the commit).  What
differs is the leaf's part of the ratio: (a) the leaf's score, the conjugate marginal
likelihood of ``(W, S)`` (``cgm``), of the five sums ``(W, Wz, Wzz, S, Sz)`` with a regressor
that depends on the split above (``linear``), or a Newton proposal of the new leaf values
with its prior and forward and reverse densities, finished by the caller with the exact
log-likelihood (``general``, ``general_linear``); (b) where the row sums come from (``cgm``
fuses them into the pass that takes the previous tree out of the residual, and rejects on
an upper bound before counting the children's available rules; the others sum the leaf's
rows after the proposal); (c) the move set: ``linear`` and ``general_linear`` change only a
node above two leaves, have no swap and fixed move probabilities (0.3, 0.3, 0.4; a user's
``move_probs`` is refused), ``cgm`` and ``general`` change any internal node with its subtree
and swap.  One grow per kind would take the structural proposal from ``tree_edit`` and a
leaf model with three operations: score a candidate leaf's rows (returning its statistics and
log factor), commit them, and finish the ratio (the identity for the conjugate forms, the
row callback for the general ones), with the fused pass and the bound as optional hooks of
the conjugate model; numba specialises a kernel on a jitted function passed as an argument,
so the leaf model costs no call at run time, but the change at any internal node and the
subtree re-routing must first be given to the linear kinds (their reverse moves differ).
Not done, and not measured.
"""
