"""Run by pvpython (tests/test_paraview.py): open each .xmf with one ParaView reader and print,
as one JSON document, what the reader produced at every time step: block names, dataset
types, point and cell counts, point coordinates and the point arrays.

    pvpython --force-offscreen-rendering tests/paraview_read.py READER FILE.xmf...

READER: legacy (XDMFReader), xdmf3s (Xdmf3ReaderS), xdmf3t (Xdmf3ReaderT) or open
(OpenDataFile, ParaView's own choice)."""

import json
import sys

import numpy as np

from paraview import simple
from vtkmodules.util.numpy_support import vtk_to_numpy

READERS = {
    "legacy": lambda f: simple.XDMFReader(FileNames=[f]),
    "xdmf3s": lambda f: simple.Xdmf3ReaderS(FileName=[f]),
    "xdmf3t": lambda f: simple.Xdmf3ReaderT(FileName=[f]),
    "open": simple.OpenDataFile,
}


def leaves(obj, name, out):
    """Datasets under obj as (block name, dataset); names of the nearest named parent."""
    if obj is None:
        return
    if obj.IsA("vtkMultiBlockDataSet"):
        for i in range(obj.GetNumberOfBlocks()):
            meta = obj.GetMetaData(i) if obj.HasMetaData(i) else None
            sub = meta.Get(obj.NAME()) if meta is not None and meta.Has(obj.NAME()) else None
            leaves(obj.GetBlock(i), sub or name, out)
    elif obj.IsA("vtkMultiPieceDataSet"):
        for i in range(obj.GetNumberOfPieces()):
            leaves(obj.GetPiece(i), name, out)
    else:
        out.append((name, obj))


def describe(ds):
    if ds.IsA("vtkPointSet"):
        xyz = vtk_to_numpy(ds.GetPoints().GetData()) if ds.GetPoints() else np.zeros((0, 3))
    else:  # rectilinear grid: coordinates per axis, points x fastest
        cx = vtk_to_numpy(ds.GetXCoordinates())
        cy = vtk_to_numpy(ds.GetYCoordinates())
        gx, gy = np.meshgrid(cx, cy)
        xyz = np.stack([gx.ravel(), gy.ravel(), 0 * gx.ravel()], axis=1)
    pd = ds.GetPointData()
    arrays = {}
    for k in range(pd.GetNumberOfArrays()):
        a = pd.GetArray(k)
        arrays[a.GetName()] = vtk_to_numpy(a).tolist()
    return {"type": ds.GetClassName(), "npoints": ds.GetNumberOfPoints(),
            "ncells": ds.GetNumberOfCells(), "x": xyz[:, 0].tolist(), "y": xyz[:, 1].tolist(),
            "z": xyz[:, 2].tolist(), "arrays": arrays}


def read(kind, path):
    r = READERS[kind](path)
    r.UpdatePipelineInformation()
    times = r.TimestepValues
    times = [times] if isinstance(times, float) else list(times or [])
    result = {"reader": r.GetXMLName(), "times": times, "steps": []}
    for t in times or [None]:
        r.UpdatePipeline(t) if t is not None else r.UpdatePipeline()
        out = []
        # the builtin session's own output: Fetch returns a rectilinear grid that is the
        # whole output without its coordinates
        leaves(r.GetClientSideObject().GetOutputDataObject(0), None, out)
        result["steps"].append({"time": t, "blocks": [dict(describe(ds), name=name)
                                                      for name, ds in out]})
    simple.Delete(r)
    return result


if __name__ == "__main__":
    kind = sys.argv[1]
    print(json.dumps({f: read(kind, f) for f in sys.argv[2:]}))
