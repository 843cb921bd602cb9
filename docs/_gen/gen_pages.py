"""mkdocs-gen-files script: writes the CLI reference and the API pages (see reference.py) into the build."""

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference

with mkdocs_gen_files.open(reference.CLI_PAGE, "w") as f:
    f.write(reference.cli_reference())

with mkdocs_gen_files.open(reference.RACE_OPTIONS_PAGE, "w") as f:
    f.write(reference.race_options_page())

for module, page in reference.api_modules():
    with mkdocs_gen_files.open(page, "w") as f:
        f.write(reference.api_page(module))

with mkdocs_gen_files.open(f"{reference.API_DIR}/SUMMARY.md", "w") as f:
    f.write(reference.api_nav())
