"""Public release functions: validate, charge the budget, call the algorithm, wrap the result."""
