"""Every dump of one mesh component as a movie: PNG frames on one colour scale, then an MP4
(ffmpeg, when installed) or else an animated GIF (Pillow, which matplotlib brings)."""

import os
import shutil
import subprocess

import numpy as np

from . import plot, read
from .units import Units


def field_movie(outdir, q, c, plots, units=Units(False), fps=5.0, vmin=None, vmax=None,
                log=False, cmap=None):
    """Frames plots/movie_<name>/frame_NNNN.png of mesh q (component c) at every dump with
    that mesh, and plots/movie_<name>.mp4 (or .gif); returns the files written."""
    its = []
    for it in read.list_iterations(outdir):
        meshes = read.list_fields(outdir, it)
        if q in meshes:
            its.append(it)
        else:  # a particle dump, or an averaged dump beside the field dumps
            read.note("dump %d has no %s: not in the movie" % (
                it, "mesh %s" % q if meshes else "meshes"))
    if not its:
        raise FileNotFoundError("no field dumps in %s" % read.data_dir(outdir))
    fields = []
    for it in its:
        try:
            fields.append(read.read_field(outdir, q, c, it))
        except read.Damaged as e:
            read.skip(e, "not in the movie")
    if not fields:
        raise FileNotFoundError("no readable field dumps in %s" % read.data_dir(outdir))
    name = fields[0].name
    fu = units.field(name)[0]
    if vmin is None or vmax is None:  # one colour scale for the whole movie
        lo = min(float(np.min(f.data)) for f in fields) * fu
        hi = max(float(np.max(f.data)) for f in fields) * fu
        if lo < 0 < hi and not log:
            lo, hi = -max(-lo, hi), max(-lo, hi)
        vmin = lo if vmin is None else vmin
        vmax = hi if vmax is None else vmax
    folder = os.path.join(plots, "movie_%s" % name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):  # frames of an earlier, longer run
        if old.startswith("frame_") and old.endswith(".png"):
            os.remove(os.path.join(folder, old))
    frames = []
    for k, fld in enumerate(fields):
        frames.append(plot.field_map(fld, os.path.join(folder, "frame_%04d.png" % k), units,
                                     vmin=vmin, vmax=vmax, log=log, cmap=cmap))
    return frames + [_encode(folder, os.path.join(plots, "movie_%s" % name), fps)]


def _encode(folder, stem, fps):
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg:
        out = stem + ".mp4"
        res = subprocess.run([ffmpeg, "-y", "-loglevel", "error", "-framerate", str(fps),
                              "-i", os.path.join(folder, "frame_%04d.png"),
                              "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p",
                              out], capture_output=True, text=True)
        if res.returncode == 0:
            return out
    from PIL import Image
    names = sorted(f for f in os.listdir(folder) if f.startswith("frame_"))
    images = [Image.open(os.path.join(folder, f)).convert("P", palette=Image.ADAPTIVE)
              for f in names]
    out = stem + ".gif"
    images[0].save(out, save_all=True, append_images=images[1:],
                   duration=int(1000 / fps), loop=0)
    return out
