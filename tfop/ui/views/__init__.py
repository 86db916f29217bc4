"""What the pages show, computed from cached objects by pure functions (given `now`): the templates only lay it
out, so the view models are tested with tables and the templates hold no logic worth testing."""
