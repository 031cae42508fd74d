"""bench/run.py's modules: devices, trees and peers, one module per
scenario, and the report."""
