"""tools/gpu-trace on a made-up trace: a mark's time runs from the later of its stream's
previous mark and the host's call, in the per-step summary and in --step's time line."""
import pathlib
import subprocess
import sys

TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "gpu-trace"

# three steps of: a field kernel, a push on main that waits for it, a host wait
ROWS = ["step,stream,what,host_ms,device_ms"]
for s in range(3):
    t = 10.0 * s
    ROWS += [f"{s},field,k_b_half,{t:.4f},{t + 1.0:.4f}",
             f"{s},main,k_push_move,{t + 0.1:.4f},{t + 5.0:.4f}",
             f"{s},host,wait-flags,{t + 0.2:.4f},{t + 5.5:.4f}",
             f"{s},field,k_e_advance,{t + 0.3:.4f},{t + 7.0:.4f}"]


def run(tmp_path, *args):
    f = tmp_path / "t.rank0.csv"
    f.write_text("\n".join(ROWS) + "\n")
    out = subprocess.run([sys.executable, str(TOOL), *args, str(f)], capture_output=True,
                         text=True, check=True)
    return out.stdout


def test_summary(tmp_path):
    out = run(tmp_path, "--skip", "1")
    assert "device ms per step: median 10.0000" in out
    # the push: from its call (0.1) to 5.0; E's update: from the field stream's last mark
    assert "4.9000   1.00x  k_push_move" in out
    assert "6.0000   1.00x  k_e_advance" in out
    assert "5.3000   1.00x  wait-flags" in out
    # the push ends at 5.0, the main stream's last mark; E's update 2.0 later
    assert "after the push's end (median ms): main 0.0000, field 2.0000" in out


def test_timeline(tmp_path):
    out = run(tmp_path, "--step", "1")
    lines = [l.split() for l in out.splitlines()[2:]]
    assert lines[0] == ["1", "field", "k_b_half", "0.000", "1.000", "1.000"]  # after step 0's
    assert lines[1] == ["1", "main", "k_push_move", "0.100", "5.000", "4.900"]
    assert lines[2] == ["1", "host", "wait-flags", "0.200", "5.500"]
    assert lines[3] == ["1", "field", "k_e_advance", "0.300", "7.000", "6.000"]
    assert lines[4][:3] == ["2", "field", "k_b_half"]
    assert "no step 7" in run(tmp_path, "--step", "7")


def test_flush_left_out(tmp_path):
    """A step in which the trace read its full batch of marks (a wait for the device) is
    not one of the steps measured."""
    rows = list(ROWS)
    ROWS.insert(6, "1,host,trace-flush,10.0500,19.0000")
    for s in range(3, 5):
        t = 10.0 * s
        ROWS.append(f"{s},main,k_push_move,{t + 0.1:.4f},{t + 5.0:.4f}")
    try:
        out = run(tmp_path, "--skip", "0")
    finally:
        ROWS[:] = rows
    assert "3 steps, device ms per step: median 10.0000" in out
    assert "(left out: step 1, where the trace read its marks)" in out


def test_kinds_and_gaps(tmp_path):
    """Steps grouped by kind (a window's shift, a rearrangement, plain), and the host's own
    time between two calls where it is long."""
    rows = ["step,stream,what,host_ms,device_ms"]
    for s, (extra, span) in enumerate([(None, 10.0), ("k_slide_rows", 12.0),
                                       ("k_relayout", 20.0), (None, 10.0), (None, 10.0)]):
        t = sum([10.0, 12.0, 20.0, 10.0, 10.0][:s])
        rows.append(f"{s},main,k_push_move,{t + 0.1:.4f},{t + 5.0:.4f}")
        if extra:  # called 0.5 ms after the push's call
            rows.append(f"{s},field,{extra},{t + 0.6:.4f},{t + 6.0:.4f}")
    f = tmp_path / "k.rank0.csv"
    f.write_text("\n".join(rows) + "\n")
    out = subprocess.run([sys.executable, str(TOOL), "--skip", "0", str(f)],
                         capture_output=True, text=True, check=True).stdout
    assert ("by kind (steps: median / mean ms): plain 2: 10.0000 / 10.0000; "
            "window shift 1: 12.0000 / 12.0000; rearrangement 1: 20.0000 / 20.0000") in out
    assert "k_push_move -> k_relayout 0.1250 (1)" in out
    assert "k_push_move -> k_slide_rows 0.1250 (1)" in out
