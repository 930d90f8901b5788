"""Run by pvpython (tests/test_paraview_render.py): open an .xmf as a user would, with
OpenDataFile (ParaView's default reader), colour it by one array at one time, render it
offscreen to a PNG and print, as JSON, the reader's name, the camera's view of the data
(the picture's pixel columns and rows of the data's bounds) and the PNG's path.

    pvpython --force-offscreen-rendering tests/paraview_render.py FILE.xmf TIME ARRAY PNG"""

import json
import sys

from paraview import simple

W, H = 800, 400


def main(path, time, array, png):
    r = simple.OpenDataFile(path)
    r.UpdatePipelineInformation()
    r.UpdatePipeline(time)
    view = simple.CreateView("RenderView")
    view.ViewSize = [W, H]
    view.OrientationAxesVisibility = 0
    view.Background = [1.0, 1.0, 1.0]
    view.UseColorPaletteForBackground = 0
    view.ViewTime = time
    disp = simple.Show(r, view)
    disp.PointSize = 6.0
    simple.ColorBy(disp, ("POINTS", array))
    disp.RescaleTransferFunctionToDataRange(False, True)
    lut = simple.GetColorTransferFunction(array)
    lo, hi = lut.RGBPoints[0], lut.RGBPoints[-4]
    if array.startswith(("E", "B", "J", "p")):  # two-signed: centred on 0
        m = max(abs(lo), abs(hi))
        lut.RescaleTransferFunction(-m, m)
    view.InteractionMode = "2D"
    simple.ResetCamera(view)
    view.CameraParallelProjection = 1
    b = r.GetDataInformation().GetBounds()
    cx, cy = 0.5 * (b[0] + b[1]), 0.5 * (b[2] + b[3])
    view.CameraPosition = [cx, cy, 10.0]
    view.CameraFocalPoint = [cx, cy, 0.0]
    view.CameraViewUp = [0.0, 1.0, 0.0]
    scale = 0.5 * max(b[3] - b[2], (b[1] - b[0]) * H / W) * 1.05
    view.CameraParallelScale = scale
    simple.Render(view)
    simple.SaveScreenshot(png, view, ImageResolution=[W, H])
    # world -> pixel: the view shows cy +- scale vertically and cx +- scale W/H across
    px = lambda x: (x - cx) / (scale * W / H) * 0.5 * W + 0.5 * W
    py = lambda y: (y - cy) / scale * 0.5 * H + 0.5 * H
    print(json.dumps({"reader": r.GetXMLName(), "bounds": list(b),
                      "columns": [px(b[0]), px(b[1])], "rows": [py(b[2]), py(b[3])],
                      "range": list(lut.RGBPoints[0::4][:1]) + [lut.RGBPoints[-4]],
                      "png": png}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4])
