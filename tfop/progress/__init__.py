"""Training progress, reported by a job's pods (docs/tfjob/progress.md): the endpoint the operator serves
(server.py: tokens.py authenticates, report.py reads and judges) and, in keras.py, the reporter and Keras callback
shipped into the pods. Imports nothing, so keras.py can be imported where only the standard library and
TensorFlow are installed."""
