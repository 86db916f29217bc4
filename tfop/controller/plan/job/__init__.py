"""The job as the planner sees it: a frozen, typed TFJobModel, made once per plan by `parse_job` from the raw
TFJob (defaults, the default PS server, the legacy GPU rewrite, validation and every annotation), or the
FieldErrors that reject it."""
