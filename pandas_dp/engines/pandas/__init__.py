"""The pandas engine: counts, group rows, region counts and unit bounding on in-memory frames."""
