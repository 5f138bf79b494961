"""A saved agent opened: its pickles with the allow-list only, its spaces against the env's, the trained agent
a run continues vetted, and the agent a run trains (new, resumed or continued)."""
