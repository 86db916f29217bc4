"""The TFJob API as data: constants, defaulting, validation. Pure: imports nothing of ours, does no I/O."""
