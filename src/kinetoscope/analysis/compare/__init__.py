"""Two runs compared (``kinetoscope diff``): the diff document (``diff_report``), its verdict,
comparability check and waterfall (``verdict``), and saved baselines for CI (``baselines``)."""
