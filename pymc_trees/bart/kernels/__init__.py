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

**The four versions of a move.**  Grow, prune and change (and swap) run in ``cgm``,
``linear``, ``general`` and ``general_linear``; the shared-output sweep is ``general`` with J
outputs.  The tree's part of each move is written once, in ``tree_edit``, and every sweep
calls it: the node picked (``pick_split``/``propose_split``, ``pick_prune``,
``pick_restructure``, ``pick_pair_rule``), the tree prior's and the proposal's part of the log
ratio (``grow_tree_logr``, ``children_logr``, ``prune_tree_logr``, ``pair_children_logr``,
``prior_subtree``), the swap's partner and its impossible case (``swap_partner``), and the
edits (``split_leaf``, ``merge_children``, ``commit_children``, ``commit_subtree``,
``restore_rules``).  What each sweep writes itself is the leaves' part: (a) the leaf's
score, the conjugate marginal likelihood of ``(W, S)`` (``cgm``), of the five sums ``(W, Wz,
Wzz, S, Sz)`` with a regressor that depends on the split above (``linear``), or a Newton
proposal of the new leaf values with its prior and forward and reverse densities, finished
by the caller with the exact log-likelihood (``general``, ``general_linear``); (b) where the
row sums come from (``cgm`` fuses them into the pass that takes the previous tree out of the
residual, and rejects on an upper bound before counting the children's available rules; the
others sum the leaf's rows after the proposal); (c) the move set: ``linear`` and
``general_linear`` change only a node above two leaves, have no swap and fixed move
probabilities (0.3, 0.3, 0.4; a user's ``move_probs`` is refused), ``cgm`` and ``general``
change any internal node with its subtree and swap.  A new move is its tree part here plus
a leaf part in each sweep that takes it; a new leaf form is a new leaf part for the existing
tree parts.  The leaves' parts are not one function per move with the leaf
form passed in, for two measured reasons (``docs/design.md``, "One move per leaf form,
measured"): the generic version exists, since a constant leaf is a linear leaf without a
regressor, and constant leaves run through it (``linear`` and ``general_linear`` with every
tree constant) take 2.25 times the conjugate sweep's time at 10,000 and 100,000 rows and
2.06 times the general sweep's (``benchmarks/generic_moves.py``); and a leaf model passed as
a jitted function argument is not cached by numba (the kernel misses the disk cache in every
new process: the linear sweep's own compile is 7.9 s, loading it 0.02 s).  A third leaf form
with the same moves should take its leaf part by an ``overload`` chosen by the type of its
leaf bundle (a ``NamedTuple``), which numba caches (checked on a small kernel).
"""
