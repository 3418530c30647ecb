// plot_export.h — any plot to PNG/PDF, a run's data to CSV.
//
// Every plot gets the same right-click menu (installExportMenu) so export is where a user
// looks for it; the file functions are separate so tests and --screenshot can call them
// without dialogs.
#pragma once

#include <QString>
#include <functional>

#include "common/run_data.h"

class QCustomPlot;
class QWidget;

namespace qklab::gui {

// Format from the suffix: .pdf is vector, anything else a PNG at 2x for slides.
bool savePlot(QCustomPlot* plot, const QString& path, QString* error = nullptr);

// Step metrics, one row per step, with the layer-level probe columns joined on probed steps.
bool saveRunCsv(const RunSnapshot& run, const QString& path, QString* error = nullptr);

// Right-click menu on the plot: "Export plot…" and, when csvSource is given, "Export data as
// CSV…" (csvSource returns the run to write). Also "Reset zoom".
void installExportMenu(QCustomPlot* plot, std::function<const RunSnapshot*()> csvSource = {});

}  // namespace qklab::gui
