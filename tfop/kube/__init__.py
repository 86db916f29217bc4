"""Generic controller machinery (client, informers, work queue, leader election, events). Knows nothing of TFJob."""
