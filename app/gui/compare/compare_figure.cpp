// compare_figure.cpp — the comparison as one figure (PNG or PDF) at a chosen size and dpi:
// the legend line, the curves in a grid and the differing config keys, all painted (not
// grabbed from the screen), so a figure is the same whatever size the window has.
#include <qcustomplot.h>

#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <algorithm>
#include <cmath>

#include "common/plot_style.h"
#include "compare/compare_panel.h"
#include "compare/compare_plots.h"

namespace qklab::gui {

// The differing keys as a compact grid (key, then one column per run in its colour): a grab
// of the table widget carried its scroll bars and empty space.
int ComparePanel::paintDiff(QPainter* p, const QFontMetrics& fm, int width) const {
    std::vector<const ConfigDiffRow*> rows;
    for (const ConfigDiffRow& row : m_comparison.diff)
        if (row.differs) rows.push_back(&row);
    const int line = fm.height() + 6, runs = int(m_comparison.runs.size());
    const int height = line * int(rows.size() + 1) + 4;
    if (!p) return height;
    int keyWidth = fm.horizontalAdvance(tr("config key"));
    for (const ConfigDiffRow* row : rows)
        keyWidth = std::max(keyWidth, fm.horizontalAdvance(QString::fromStdString(row->key)));
    keyWidth += 12;
    const int cell = runs > 0 ? std::max(40, (width - keyWidth) / runs) : 0;
    p->fillRect(QRect(0, 0, width, height), palette().color(QPalette::Base));
    auto text = [&](int x, int y, int w, const QString& t, const QColor& color) {
        p->setPen(color);
        p->drawText(QRect(x + 4, y, w - 8, line), Qt::AlignVCenter | Qt::AlignLeft,
                    fm.elidedText(t, Qt::ElideRight, w - 8));
    };
    const QColor ink = palette().color(QPalette::Text);
    text(0, 0, keyWidth, tr("config key"), ink);
    for (int r = 0; r < runs; ++r)
        text(keyWidth + r * cell, 0, cell, m_comparison.runs[r].label(), m_plots->runColor(r));
    for (size_t i = 0; i < rows.size(); ++i) {
        const int y = line * int(i + 1);
        p->setPen(palette().color(QPalette::Mid));
        p->drawLine(0, y, width, y);
        text(0, y, keyWidth, QString::fromStdString(rows[i]->key), ink);
        for (int r = 0; r < runs && r < int(rows[i]->values.size()); ++r)
            text(keyWidth + r * cell, y, cell, QString::fromStdString(rows[i]->values[r]), ink);
    }
    return height;
}

// The legend line as the PDF draws it, in text: a colour square and the label of each run,
// wrapped at `width`, then the note on runs no longer in the database.
int ComparePanel::paintLegend(QPainter* p, const QFontMetrics& fm, int width) const {
    const int line = fm.height() + 4, box = fm.ascent() * 3 / 4;
    int x = 4, y = 0;
    auto place = [&](const QString& t, const QColor* swatchColor) {
        const int w = (swatchColor ? box + 4 : 0) + fm.horizontalAdvance(t) + 12;
        if (x > 4 && x + w > width) {
            x = 4;
            y += line;
        }
        if (p && swatchColor) p->fillRect(QRect(x, y + (line - box) / 2, box, box), *swatchColor);
        const int textX = x + (swatchColor ? box + 4 : 0);
        if (p) {
            p->setPen(palette().color(QPalette::WindowText));
            p->drawText(QRect(textX, y, width - textX, line), Qt::AlignVCenter | Qt::AlignLeft, t);
        }
        x += w;
    };
    place(tr("Comparing %n run(s):", nullptr, int(m_comparison.runs.size())), nullptr);
    for (const LegendEntry& e : legendEntries()) place(e.label, &e.color);
    if (!m_comparison.missing.empty()) {
        QStringList ids;
        for (int64_t id : m_comparison.missing) ids << QString::number(id);
        x = width;  // a line of its own
        place(
            tr("No longer in the database (deleted?): run %1").arg(ids.join(QStringLiteral(", "))),
            nullptr);
    }
    return y + line + 4;
}

// The plots in a grid at the figure's layout size: as many columns as the view has, fewer when
// a narrow figure (a paper column) would squeeze them under kMinPlotWidth; the plot height
// from the given height, or from the width when it is "auto" (a 0.62 aspect, at least 140 px
// so that a paper column's axes keep room for their ticks).
ComparePanel::FigureLayout ComparePanel::figureLayout(const FigureSize& size,
                                                      const QFontMetrics& fm) const {
    FigureLayout f;
    f.scale = double(std::max(1, size.dpi)) / std::max(1, logicalDpiX());
    f.logical.setWidth(int(size.width / f.scale));
    QList<QCustomPlot*> plots;
    for (QCustomPlot* plot :
         m_plots->smallMultiples() ? m_plots->multiplePlots() : m_plots->plots())
        if (plot->isVisibleTo(m_plots)) plots << plot;
    const int width = f.logical.width();
    const int columns = std::clamp(width / kMinPlotWidth, 1, std::max(1, m_plots->gridColumns()));
    const int rows = std::max(1, (int(plots.size()) + columns - 1) / columns);
    f.legendHeight = paintLegend(nullptr, fm, width);
    int diffHeight = paintDiff(nullptr, fm, width);
    int plotHeight = std::max(140, int(std::lround(width / columns * 0.62)));
    if (size.height > 0) {
        f.logical.setHeight(int(size.height / f.scale));
        const int left = f.logical.height() - f.legendHeight;
        if ((left - diffHeight) / rows < 80) diffHeight = 0;  // the plots come first
        plotHeight = std::max(20, (left - diffHeight) / rows);
    } else {
        f.logical.setHeight(f.legendHeight + rows * plotHeight + diffHeight);
    }
    f.device = QSize(
        size.width, size.height > 0 ? size.height : int(std::lround(f.logical.height() * f.scale)));
    for (int i = 0; i < int(plots.size()); ++i)
        f.plots.push_back({plots[i], QRect((i % columns) * width / columns,
                                           f.legendHeight + (i / columns) * plotHeight,
                                           width / columns, plotHeight)});
    f.diffTop = f.legendHeight + rows * plotHeight;
    f.withDiff = diffHeight > 0;
    return f;
}

// Legend, plots and diff in layout pixels on `p` (scaled to the file's pixels by the caller).
// No pixmap-cached tick labels (they would be screen-sized bitmaps, blurred by the scale);
// non-cosmetic: the dense curves' 0-width hairlines become 1 px lines that scale with the
// figure instead of 1 device dot. `vector` (a PDF) also drops the half-pixel shift that
// QCustomPlot gives raster output.
void ComparePanel::paintFigure(QCPPainter& p, const FigureLayout& f, const QFontMetrics& fm,
                               bool vector) {
    p.setModes(QCPPainter::pmNoCaching | QCPPainter::pmNonCosmetic |
               (vector ? QCPPainter::pmVectorized : QCPPainter::pmDefault));
    p.setFont(font());
    p.fillRect(QRect(QPoint(0, 0), f.logical), palette().color(QPalette::Window));
    paintLegend(&p, fm, f.logical.width());
    for (const auto& [plot, rect] : f.plots) {
        p.save();
        p.translate(rect.topLeft());
        wrapTitleTo(plot, rect.width());  // toPainter lays out without a replot's signals
        plot->toPainter(&p, rect.width(), rect.height());
        p.restore();
    }
    if (f.withDiff) {
        p.translate(0, f.diffTop);
        paintDiff(&p, fm, f.logical.width());
    }
    // toPainter left each plot laid out at the figure's size: back to the widget's.
    for (const auto& [plot, rect] : f.plots) plot->replot(QCustomPlot::rpQueuedReplot);
}

// Vector: QCustomPlot paints each plot into the PDF's painter (toPainter) and the legend and
// diff are text, so the figure scales for a paper (grabbing the widgets embedded bitmaps).
// The page's resolution is the screen's, so fonts given in points keep their size, and the
// page measures the figure's pixels at its dpi (1920 px at 144 dpi: 13.33 in).
bool ComparePanel::saveFigurePdf(const QString& path, const FigureSize& size, QString* error) {
    QPdfWriter pdf(path);
    pdf.setResolution(std::max(1, logicalDpiX()));
    pdf.setCreator(QStringLiteral("qklab"));
    const QFontMetrics fm(font(), &pdf);
    const FigureLayout f = figureLayout(size, fm);
    const double toPoints = 72.0 / pdf.resolution();
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setPageSize(QPageSize(QSizeF(f.logical.width() * toPoints, f.logical.height() * toPoints),
                              QPageSize::Point, QString(), QPageSize::ExactMatch));
    QCPPainter p;
    if (!p.begin(&pdf)) {
        if (error) *error = tr("cannot write %1").arg(path);
        return false;
    }
    paintFigure(p, f, fm, true);
    return p.end();
}

// PNG (or another raster format, by the suffix): exactly size.width x size.height pixels (the
// height from the content when 0), laid out at the screen's resolution and painted scaled by
// dpi / screen dpi, so that text keeps its size in points; the file carries the dpi.
bool ComparePanel::saveFigure(const QString& path, QString* error, const FigureSize& size) {
    if (QFileInfo(path).suffix().compare(QStringLiteral("pdf"), Qt::CaseInsensitive) == 0)
        return saveFigurePdf(path, size, error);
    QImage measure(1, 1, QImage::Format_RGB32);
    setImageDpi(measure, logicalDpiX());  // fonts in points measure as on the screen
    const QFontMetrics fm(font(), &measure);
    const FigureLayout f = figureLayout(size, fm);
    QImage image(f.device, QImage::Format_RGB32);
    if (image.isNull()) {
        if (error)
            *error = tr("%1 x %2 pixels is too large").arg(f.device.width()).arg(f.device.height());
        return false;
    }
    setImageDpi(image, logicalDpiX());
    image.fill(palette().color(QPalette::Window));
    QCPPainter p(&image);
    p.scale(f.scale, f.scale);
    paintFigure(p, f, fm, false);
    p.end();
    setImageDpi(image, size.dpi);
    if (!image.save(path)) {
        if (error) *error = tr("cannot write %1").arg(path);
        return false;
    }
    return true;
}

}  // namespace qklab::gui
