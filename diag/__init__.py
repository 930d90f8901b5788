"""empic post-processing: readers for the openPMD dumps, energy.csv and timing.json, PNG
plots, and a command line (`python3 -m diag --help`)."""

from .read import (Field, Particles, data_dir, dump_path, list_fields, list_iterations,
                   list_species, read_energy, read_field, read_particles, read_timing)

__all__ = ["Field", "Particles", "data_dir", "dump_path", "list_fields", "list_iterations",
           "list_species", "read_energy", "read_field", "read_particles", "read_timing"]
__version__ = "0.1.0"
