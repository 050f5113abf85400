"""Privacy: mechanisms (calibration, samplers), accounting (dp-accounting), and each paper's own bounds."""
