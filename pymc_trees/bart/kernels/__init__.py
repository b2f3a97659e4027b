"""BART's numba kernels: the mutable forest, node rules, the prior, and one module per tree
update.  Arrays in and out, the rng passed in, nothing of PyMC.

- ``forest``: the forest's arrays (``Forest``, and ``ForestArrays``, their view for a kernel);
  ``bundles``: the other named bundles a kernel takes (``SweepData``, ``TreeRules``,
  ``SweepScratch``); ``nodes``: rules, availability, leaf draws; ``prior``: prior trees.
- ``tree_edit``: editing a packed tree (node classes, a grow's proposal, partitions, the
  children's and a subtree's available rules, the commits), shared by every sweep;
  ``row_sums``: the conjugate sweep's passes over the rows and leaf sums; ``row_blocks``: the
  passes in fixed blocks of rows on several threads; ``small_pass``: the linear leaves' pass
  when the trees have at most two leaves, on vector registers.
- One module per tree update: ``cgm`` (Chipman-George-McCulloch moves, constant leaves,
  conjugate), ``linear`` (linear leaves: their algebra and hooks) and ``linear_sweep``
  (their conjugate sweep), ``general`` (any likelihood: Newton
  leaf proposals, ``newton``, through a row callback, ``row_calls``; its change and swap,
  ``general_restructure``), ``general_linear``
  (linear leaves, any likelihood), ``gamma_leaves`` (log-gamma leaves, conjugate in
  likelihoods through ``exp``), ``pg`` (Particle Gibbs), ``gfr`` (grow-from-root warm
  start); ``augment``: data augmentation.
- ``conjugate_moves``: grow and prune of the conjugate sweeps (leaves integrated out),
  written once for constant, linear and log-gamma leaves, and CGM's change and swap for
  the constant and log-gamma leaves.

Every sweep and move kernel takes the bundles (``SweepData``, ``TreeRules``, ``ForestArrays``,
``SweepScratch``, and its own: ``RowState``/``RowBuffers``, ``LinearRows``/``LinearSums``,
``PGBuffers``, ``GFRScratch``) and unpacks the fields it reads (numba passes a named tuple of
arrays as one argument, at no cost).

**One move, several leaf forms.**  The tree's part of every move is written once, in
``tree_edit``: the node picked (``pick_split``/``propose_split``, ``pick_prune``,
``pick_restructure``, ``pick_pair_rule``), the tree prior's and the proposal's part of the log
ratio (``grow_tree_logr``, ``children_logr``, ``prune_tree_logr``, ``pair_children_logr``,
``prior_subtree``), the swap's partner (``swap_partner``) and the edits (``split_leaf``,
``merge_children``, ``commit_children``, ``commit_subtree``, ``restore_rules``).  The
conjugate sweeps' grow and prune are written once, in ``conjugate_moves``, around the
leaves' part: a leaf form is a ``NamedTuple`` bundle (``ConstantLeaves`` in ``cgm``,
``LinearLeaves`` in ``linear``, ``GammaLeaves`` in ``gamma_leaves``) that implements the hooks
with ``numba.extending.overload``
on its type; numba compiles and caches the moves once per form.  A new conjugate leaf form
is a bundle and its hooks, not a copy of the moves.

What stays per sweep: (a) the pass over the rows before a move (``cgm`` and
``linear_sweep`` fuse the proposal's new leaves' sums into the pass that takes the previous
tree out of the residual; ``cgm`` keeps row counts instead of summing precisions); (b) the
linear leaves' change (a node above two leaves, no swap, fixed move probabilities 0.3, 0.3,
0.4, so that a user's ``move_probs`` is refused; CGM's change and swap of the constant and
log-gamma leaves are ``conjugate_moves.restructure``); (c) the leaf updates after the move;
(d) the general step's grow and prune, in ``general`` (constant leaves, J outputs) and
``general_linear``: written once with the same hooks they measured 2 to 6% slower on the
general step's small models, more than the restructure allowed.
``docs/explanation/code-layout.md``, "One
move per leaf form, measured", has these figures, and why the hooks are overloads and not
the linear form with no regressor (a constant leaf is one, at 2.2 times the sweep's time)
nor a function passed as an argument (no disk cache).
"""

import os as _os

# OpenMP's threads (numba's threading layer here) wait between the passes of a sweep by
# spinning for 10,000 turns (tens of microseconds), then sleep: enough for the gaps between
# one tree's pass and the next, short enough that idle threads do not hold the cores for
# long.  Set before numba starts them (docs/explanation/threads.md, "Waiting between the
# passes"), unless the user chose a wait policy or a spin count.
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "10000")
