"""`tfop ui`: a read-only web page for TFJobs, served from informer caches, every view authorized as its user."""
