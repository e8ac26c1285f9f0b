import subprocess
import sys

import pytest

from trainers import cli


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "bench" in capsys.readouterr().out


def test_bench_help_explains_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    out = capsys.readouterr().out
    for opt in ("--allocators", "--episodes", "--group-sizes", "--seed", "--workers", "--no-plots"):
        assert opt in out
    assert "comma-separated" in out


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "usage" in capsys.readouterr().out


def test_bench_runs_and_prints_table(tmp_path, capsys):
    rc = cli.main(
        [
            "bench",
            "--allocators",
            "uniform,random",
            "--envs",
            "rounds",
            "--num-questions",
            "4",
            "--episodes",
            "5",
            "--workers",
            "1",
            "--out",
            str(tmp_path),
            "--name",
            "r",
            "--no-plots",
            "--no-progress",
            "--max-group",
            "none",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "uniform" in out and "random" in out and "gain" in out
    assert (tmp_path / "r" / "summary.json").is_file()
    assert not (tmp_path / "r" / "utility_bars.png").exists()


def test_bad_input_exits_2_with_fix(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "--envs", "rounds", "--episodes", "1", "--no-progress"])
    assert exc.value.code == 2
    assert "episodes must be >= 2" in capsys.readouterr().err


def test_imports_stay_light():
    code = (
        "import sys, adaroll_env, agents, trainers, trainers.cli, agents.benchmarks; "
        "heavy = [m for m in ('torch', 'transformers', 'stable_baselines3') if m in sys.modules]; "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_adaroll_env_imports_neither_agents_nor_trainers():
    code = (
        "import sys, adaroll_env, adaroll_env.envs, adaroll_env.throughput; "
        "bad = [m for m in ('agents', 'trainers') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_solve_builds_caches_and_plots(tmp_path, capsys):
    args = [
        "solve",
        "--prior",
        "0.5,0.5",
        "--max-group",
        "24",
        "--num-questions",
        "8",
        "--group-size",
        "4",
        "--cache-dir",
        str(tmp_path / "c"),
        "--out",
        str(tmp_path / "p.png"),
    ]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "built" in out and "certified bound" in out
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert list((tmp_path / "c" / "tables").glob("*.npz"))
    assert cli.main(args) == 0
    assert "loaded" in capsys.readouterr().out


def test_solve_bad_prior(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["solve", "--prior", "0.5", "--out", ""])
    assert exc.value.code == 2
    assert "'a,b'" in capsys.readouterr().err
