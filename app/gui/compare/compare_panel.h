// compare_panel.h — the comparison workspace: 2-12 stored runs side by side. Curves
// (ComparePlots) above; below, the summary table (sortable, best per column marked, CSV), the
// config diff (differences only by default) and each run's events.
//
// A comparison that holds a run still training reloads every 2 s, so its curves keep
// extending; a run deleted meanwhile leaves with a note.
#pragma once

#include <QRect>
#include <QWidget>
#include <utility>
#include <vector>

#include "common/figure_size.h"
#include "compare/compare_data.h"

class QCheckBox;
class QCPPainter;
class QCustomPlot;
class QComboBox;
class QFontMetrics;
class QHBoxLayout;
class QPainter;
class QLabel;
class QLineEdit;
class QSlider;
class QSplitter;
class QTabWidget;
class QTableWidget;
class QTextBrowser;
class QTimer;

namespace qklab::gui {

class CompareAttention;
class CompareHistograms;
class ComparePlots;

class ComparePanel : public QWidget {
    Q_OBJECT
  public:
    static constexpr int kMaxRuns = 12;
    // The config diff's columns wrap at about this many characters.
    static constexpr int kDiffCellChars = 40;

    explicit ComparePanel(QWidget* parent = nullptr);

    // Loads the runs from the store on a pool thread, then shows them.
    void setRuns(const QString& dbPath, const std::vector<int64_t>& runIds);
    const std::vector<int64_t>& runIds() const { return m_runIds; }
    // Shows an already loaded comparison (tests, and setRuns's result).
    void setComparison(Comparison comparison);
    const Comparison& comparison() const { return m_comparison; }
    ComparePlots* plots() const { return m_plots; }
    CompareHistograms* histograms() const { return m_histograms; }
    CompareAttention* attention() const { return m_attention; }
    QTabWidget* views() const { return m_views; }
    QTableWidget* summaryTable() const { return m_summary; }
    QTableWidget* diffTable() const { return m_diff; }
    // A lesson step's plots (ComparePlots::setLessonMetrics).
    void setLessonMetrics(const QStringList& metrics);
    // Presenter mode on or off: the plots a lesson names, and the summary as a list (one row
    // per column, one column per run) so that it fits beside the lesson at 1024x768.
    void presenterChanged();
    void setDifferencesOnly(bool on);
    void setSmoothing(double weight);
    void setGroupSeeds(bool on);  // group by seed, or not at all
    // "" (none), kGroupBySeed or a config key that differs among the runs (the "Group by"
    // choice); a key not offered leaves the runs ungrouped.
    void setGroupBy(const QString& groupBy);
    QString groupBy() const;
    // "Align at": "" (none) or an alignment rule (qklab/analysis/alignment.h: "spike", "step:300",
    // "threshold:loss>6", ...). A rule that does not parse leaves the curves unaligned and
    // says why on the argument's field; returns whether it applied.
    bool setAlignment(const QString& rule);
    QString alignment() const;  // the rule applied, "" when none
    QLineEdit* alignArgument() const { return m_alignArg; }

    // The legend's entries, in the tab and in the figure: one per group (its colour and label)
    // when grouped, else one per run.
    // Aligned, a run without an anchor is greyed, with the reason.
    struct LegendEntry {
        QColor color;
        QString label;
        bool greyed = false;
    };
    std::vector<LegendEntry> legendEntries() const;

    // Saved comparisons (the store's comparisons table): the runs and every view setting.
    bool saveAs(const QString& name, QString* error);
    void openSaved(const QString& name);  // reopens exactly as saved (async)
    QStringList savedNames() const;
    QString settingsJson() const;
    void applySettings(const QString& json);

    bool saveSeriesCsv(const QString& path, QString* error) const;
    bool saveSummaryCsv(const QString& path, QString* error) const;
    // The legend, the curves and the differing config keys as one PNG or PDF (by the file's
    // suffix), at `size` whatever the window's size: the PNG exactly that many pixels with its
    // dpi in the file, the PDF vector (paths and text) on a page of size / dpi inches.
    bool saveFigure(const QString& path, QString* error, const FigureSize& size = {});

    // Where the figure's parts go, in layout pixels (the screen's; `scale` to the file's).
    struct FigureLayout {
        double scale = 1;
        QSize logical, device;
        int legendHeight = 0, diffTop = 0;
        bool withDiff = true;  // left out when a fixed height leaves the plots too little
        std::vector<std::pair<QCustomPlot*, QRect>> plots;
    };
    // A plot in a figure is at least this wide (layout pixels): a paper column gets fewer
    // columns of plots rather than unreadable ones.
    static constexpr int kMinPlotWidth = 160;
    FigureLayout figureLayout(const FigureSize& size, const QFontMetrics& fm) const;

  signals:
    void loaded(int runs, double seconds);
    void error(const QString& title, const QString& message);

  private:
    QWidget* buildToolbar();
    void buildViewControls(QWidget* bar, QHBoxLayout* row, QHBoxLayout* groupRow);
    void connectViewControls();
    void buildSaveRow(QHBoxLayout* row);
    void fillSummary();
    void markBestSummaryValues(bool list);
    void fillDiff();
    void fillEvents();
    void fillLegend();
    void groupingChanged();
    QWidget* buildAlignControls();
    void alignmentChanged();
    // Aligned: each run's anchor on its legend entry (ungrouped), or greyed with the reason.
    void alignLegend(std::vector<LegendEntry>& entries) const;
    void fillGroupChoices();
    void reloadIfLive();
    void exportAs(const QString& what);
    void refreshSaved();
    void askSaveName();
    bool saveFigurePdf(const QString& path, const FigureSize& size, QString* error);
    void paintFigure(QCPPainter& p, const FigureLayout& f, const QFontMetrics& fm, bool vector);
    // Lay out (and paint, when p is given) the figure's legend line and its table of the
    // differing config keys at `width`, in the font metrics of the device; return the height.
    int paintLegend(QPainter* p, const QFontMetrics& fm, int width) const;
    int paintDiff(QPainter* p, const QFontMetrics& fm, int width) const;

    Comparison m_comparison;
    QString m_dbPath;
    std::vector<int64_t> m_runIds;
    uint64_t m_generation = 0;

    QTabWidget* m_views = nullptr;  // curves, histograms
    ComparePlots* m_plots = nullptr;
    CompareHistograms* m_histograms = nullptr;
    CompareAttention* m_attention = nullptr;
    QLabel* m_legend = nullptr;
    QComboBox* m_xChoice = nullptr;
    QComboBox* m_layer = nullptr;
    QSlider* m_smoothing = nullptr;
    QLabel* m_smoothingLabel = nullptr;
    QComboBox* m_groupBy = nullptr;
    QComboBox* m_alignKind = nullptr;  // none, then alignKinds()
    QLineEdit* m_alignArg = nullptr;   // the rule's argument, for kinds that take one
    QCheckBox* m_multiples = nullptr;
    QComboBox* m_multiMetric = nullptr;
    QCheckBox* m_diffOnly = nullptr;
    QTableWidget* m_summary = nullptr;
    QSplitter* m_split = nullptr;  // curves above, tables below
    QList<int> m_splitSizes;       // before presenter mode: restored on leaving it
    QTableWidget* m_diff = nullptr;
    QTextBrowser* m_events = nullptr;
    QTimer* m_liveTimer = nullptr;
    QComboBox* m_saved = nullptr;
    FigureSize m_figureSize;    // the last one chosen for an export
    QString m_pendingSettings;  // applied once the saved comparison's runs are loaded
};

}  // namespace qklab::gui
