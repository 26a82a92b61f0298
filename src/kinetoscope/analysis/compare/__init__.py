"""Two runs compared (``kinetoscope diff``): the diff document (``diff_report``) made of each side's
per-step aggregates (``aggregates``), what changed per op, shape, kernel, module and category
(``breakdowns``), ops by their place in the op tree (``op_tree``) and the headline figures
(``headline_figures``); its verdict, comparability check and waterfall (``verdict``); and saved
baselines for CI (``baselines``)."""
