"""The TFJob controller: the pure planner (plan/) and the wiring that watches, reconciles and applies plans."""
