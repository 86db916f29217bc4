"""What the planner observes, as frozen typed views built once per pass from the informers' slim objects
(controller/cache_transforms.py): a pod's phase and exits, a Job's outcome, a node's health. Raw JSON stays at the
edges; the planner reads these. This sub-package is plan/'s bottom: it imports only tfop.api and the stdlib."""
