"""The TFJob controller: pure planning (resources, status, reconcile) and the wiring that applies plans."""
