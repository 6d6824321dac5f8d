"""Table sets (ResidualPlanner): workload and closure, plan, measurement, reconstruction, counting kernel."""
