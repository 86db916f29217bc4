"""Components started on demand beside a local cluster: Kueue, and the gang schedulers' side."""
