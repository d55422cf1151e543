"""python -m cyad: differentiate a few functions and print the results."""
