"""progress=True shows a long run as it goes: a tqdm bar, or a line on stderr without tqdm."""
import builtins
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cyad


@pytest.fixture
def without_tqdm(monkeypatch):
    real_import = builtins.__import__

    def refuse_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse_tqdm)


def _scalar(x):
    return np.sum(np.sin(x) * x[::-1])


POINTS = np.random.default_rng(3).uniform(-1.0, 1.0, (300, 4))


@pytest.mark.parametrize("workers", [None, 2, "map"])
def test_at_points_shows_the_points_done(workers, without_tqdm, capsys):
    expected = cyad.at_points(cyad.gradient, _scalar, POINTS)
    assert capsys.readouterr().err == ""      # nothing unless asked
    if workers == "map":
        with ThreadPoolExecutor(2) as pool:
            got = cyad.at_points(cyad.gradient, _scalar, POINTS, workers=pool.map, tasks=5,
                                 progress=True)
    else:
        got = cyad.at_points(cyad.gradient, _scalar, POINTS, workers=workers, progress=True)
    np.testing.assert_array_equal(got, expected)
    lines = capsys.readouterr().err
    assert lines.startswith("\rcyad.at_points(gradient): 0/300 (0%)")
    assert "\rcyad.at_points(gradient): 300/300 (100%), " in lines and lines.endswith(" s\n")


@pytest.mark.parametrize("detect, what, passes", [
    (cyad.jacobian_sparsity, "jacobian_sparsity", 1),
    (cyad.hessian_sparsity, "hessian_sparsity", 2),
])
def test_sparsity_detection_shows_the_instructions_done(detect, what, passes, without_tqdm,
                                                        capsys):
    pytest.importorskip("scipy")
    f = _scalar if passes == 2 else (lambda x: x[1:] * x[:-1])
    expected = detect(f, np.ones(6)).toarray()
    np.testing.assert_array_equal(detect(f, np.ones(6), progress=True).toarray(), expected)
    err = capsys.readouterr().err
    assert f"\rcyad.{what}: instructions: 0/" in err
    total = int(err.split(": instructions: 0/")[1].split(" ")[0])
    assert total > 0 and total % passes == 0
    assert f"{total}/{total} (100%)" in err and err.endswith(" s\n")


def test_a_sparse_prep_shows_its_detection(without_tqdm, capsys):
    pytest.importorskip("scipy")
    cyad.prepare_sparse_hessian(_scalar, np.ones(5), progress=True)
    assert "cyad.hessian_sparsity: instructions:" in capsys.readouterr().err


def test_tqdm_shows_the_bar_where_installed(capsys):
    pytest.importorskip("tqdm")
    cyad.at_points(cyad.gradient, _scalar, POINTS, progress=True)
    assert "300/300" in capsys.readouterr().err
