"""Where a rank's time goes, step by step: the per-rank overview, step times and stragglers, the
steady-state window (warm-up and serving phases), and what each headline share is a share of."""
