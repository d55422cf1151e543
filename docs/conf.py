"""Sphinx configuration of cyad's documentation: the user guide (MyST Markdown), the API
reference from the numpydoc docstrings, the galleries of examples/scipy and examples/ipopt
(run with --quick, their matplotlib figures collected), the figures of the guide drawn at build
time from the scripts in docs/plots (matplotlib's plot directive), and the supported-functions
table generated from cyad's tables."""
import pathlib
import sys

import cyad

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "cyad"
copyright = "the cyad developers"
release = version = cyad.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
    "cyad_supported",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "generated/*.examples", "auto_examples*/*.ipynb",
                    "auto_examples*/*.py", "auto_examples*/*.zip", "auto_examples*/*.json",
                    "auto_examples*/*.md5", "auto_examples*/*.codeobj.json"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": [str(HERE.parent / "examples" / "scipy"),
                      str(HERE.parent / "examples" / "ipopt")],
    "gallery_dirs": ["auto_examples", "auto_examples_ipopt"],
    "filename_pattern": r"\.py$",         # run every example, printing its comparison
    "reset_argv": "gallery_argv.quick",
    "image_scrapers": ("matplotlib",),    # each example's figure
    "download_all_examples": False,
    "remove_config_comments": True,
    "line_numbers": False,
}

# the guide's figures: `.. plot:: plots/NAME.py` in an eval-rst block (the directive needs
# docutils' state machine, which MyST's own directive syntax does not give it) runs
# docs/plots/NAME.py (a path relative to docs/) at build time: one PNG, a link to the script
plot_formats = [("png", 110)]
plot_html_show_formats = False
plot_html_show_source_link = True

html_theme = "pydata_sphinx_theme"
html_title = "cyad"
html_static_path = []
html_theme_options = {"navigation_with_keys": False}
