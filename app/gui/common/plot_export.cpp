// plot_export.cpp — writing plots and run data to files, with clear error messages.
#include "common/plot_export.h"

#include <qcustomplot.h>

#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>

#include "common/file_dialogs.h"
#include "qklab/store/run_export.h"

namespace qklab::gui {

bool savePlot(QCustomPlot* plot, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    bool ok = false;
    if (suffix == QLatin1String("pdf")) {
        ok = plot->savePdf(path);
    } else if (suffix == QLatin1String("jpg") || suffix == QLatin1String("jpeg")) {
        ok = plot->saveJpg(path, 0, 0, 2.0);
    } else {
        ok = plot->savePng(path, 0, 0, 2.0);
    }
    if (!ok && error)
        *error = QStringLiteral("Could not write %1 (is the folder writable?)").arg(path);
    return ok;
}

// The same CSV as `qklab-cli export --format csv` (core's runCsv), byte for byte.
bool saveRunCsv(const RunSnapshot& run, const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        if (error) *error = QStringLiteral("Could not write %1: %2").arg(path, file.errorString());
        return false;
    }
    const std::string text = runCsv(run.steps, run.probes, run.customScalars);
    if (file.write(text.data(), qint64(text.size())) != qint64(text.size()) || !file.flush()) {
        if (error) *error = QStringLiteral("Writing %1 failed: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

void installExportMenu(QCustomPlot* plot, std::function<const RunSnapshot*()> csvSource) {
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(
        plot, &QWidget::customContextMenuRequested, plot, [plot, csvSource](const QPoint& pos) {
            QMenu menu(plot);
            menu.addAction(QObject::tr("Export plot (PNG/PDF)…"), plot, [plot] {
                const QString path =
                    chooseFileToSave(plot, QObject::tr("Export plot"), QStringLiteral("plot.png"),
                                     QObject::tr("PNG image (*.png);;PDF document (*.pdf)"));
                if (path.isEmpty()) return;
                QString error;
                if (!savePlot(plot, path, &error))
                    QMessageBox::warning(plot, QObject::tr("Export failed"), error);
            });
            if (csvSource) {
                menu.addAction(QObject::tr("Export run data (CSV)…"), plot, [plot, csvSource] {
                    const RunSnapshot* run = csvSource();
                    if (!run || run->runId == 0) {
                        QMessageBox::information(plot, QObject::tr("Export"),
                                                 QObject::tr("No run is shown in this plot."));
                        return;
                    }
                    const QString path = chooseFileToSave(
                        plot, QObject::tr("Export run data"),
                        QStringLiteral("run-%1.csv").arg(run->runId), QObject::tr("CSV (*.csv)"));
                    if (path.isEmpty()) return;
                    QString error;
                    if (!saveRunCsv(*run, path, &error))
                        QMessageBox::warning(plot, QObject::tr("Export failed"), error);
                });
            }
            menu.addSeparator();
            menu.addAction(QObject::tr("Reset zoom"), plot, [plot] {
                plot->rescaleAxes(true);
                plot->replot(QCustomPlot::rpQueuedReplot);
            });
            menu.exec(plot->mapToGlobal(pos));
        });
}

}  // namespace qklab::gui
