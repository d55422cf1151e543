"""The command line the gallery runs each example with (sphinx-gallery's ``reset_argv``,
named by its path so that the configuration stays cacheable)."""


def quick(gallery_conf, script_vars):
    return ["--quick"]
