"""Serving requests (issue 53), the engine's part: the cost table of a deployment mapped from its
parts (`table_build`), one served load with its files (`serve`), and the goodput search."""
