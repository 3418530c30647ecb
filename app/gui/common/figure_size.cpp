// figure_size.cpp — figure size presets and the dialog that picks one.
#include "common/figure_size.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QImage>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <cmath>

namespace qklab::gui {

const std::vector<FigurePreset>& figurePresets() {
    static const std::vector<FigurePreset> presets{
        {QObject::tr("Slide: 1920 x 1080 px (16:9, 144 dpi)"), {1920, 1080, 144}},
        {QObject::tr("Paper column: 3.5 in at 300 dpi"), {1050, 0, 300}},
        {QObject::tr("Paper full width: 7 in at 300 dpi"), {2100, 0, 300}},
    };
    return presets;
}

namespace {
// The dialog's ranges, and parseFigureSize's.
constexpr int kMinWidth = 100, kMaxSide = 16000, kMinDpi = 36, kMaxDpi = 1200;
}  // namespace

std::optional<FigureSize> parseFigureSize(const QString& text) {
    const QString t = text.trimmed().toLower();
    const QStringList names{QStringLiteral("slide"), QStringLiteral("column"),
                            QStringLiteral("full")};
    if (names.contains(t)) return figurePresets()[size_t(names.indexOf(t))].size;
    static const QRegularExpression form(QStringLiteral("^(\\d{1,5})x(\\d{1,5}|auto)@(\\d{1,4})$"));
    const QRegularExpressionMatch m = form.match(t);
    if (!m.hasMatch()) return std::nullopt;
    const FigureSize s{m.captured(1).toInt(),
                       m.captured(2) == QLatin1String("auto") ? 0 : m.captured(2).toInt(),
                       m.captured(3).toInt()};
    const bool fits = s.width >= kMinWidth && s.width <= kMaxSide && s.height >= 0 &&
                      s.height <= kMaxSide && s.dpi >= kMinDpi && s.dpi <= kMaxDpi &&
                      (s.height == 0 || s.height >= kMinWidth);
    return fits ? std::optional<FigureSize>(s) : std::nullopt;
}

void setImageDpi(QImage& image, int dpi) {
    const int perMeter = int(std::lround(dpi / 0.0254));
    image.setDotsPerMeterX(perMeter);
    image.setDotsPerMeterY(perMeter);
}

FigureSizeDialog::FigureSizeDialog(QWidget* parent, const FigureSize& start) : QDialog(parent) {
    setWindowTitle(tr("Figure size"));
    auto* form = new QFormLayout(this);
    m_preset = new QComboBox;
    m_preset->setObjectName(QStringLiteral("figurePreset"));
    for (const FigurePreset& p : figurePresets()) m_preset->addItem(p.title);
    m_preset->addItem(tr("Custom"));
    auto spin = [](int low, int high, const QString& suffix) {
        auto* s = new QSpinBox;
        s->setRange(low, high);
        s->setSuffix(suffix);
        return s;
    };
    m_width = spin(kMinWidth, kMaxSide, tr(" px"));
    m_width->setObjectName(QStringLiteral("figureWidth"));
    m_height = spin(0, kMaxSide, tr(" px"));
    m_height->setObjectName(QStringLiteral("figureHeight"));
    m_height->setSpecialValueText(tr("auto (as tall as the figure needs)"));
    m_dpi = spin(kMinDpi, kMaxDpi, tr(" dpi"));
    m_dpi->setObjectName(QStringLiteral("figureDpi"));
    m_dpi->setToolTip(
        tr("Stored in the PNG; text is scaled with it so that it keeps its size "
           "in points on the page"));
    m_inches = new QLabel;
    form->addRow(tr("Size:"), m_preset);
    form->addRow(tr("Width:"), m_width);
    form->addRow(tr("Height:"), m_height);
    form->addRow(tr("Resolution:"), m_dpi);
    form->addRow(QString(), m_inches);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
    m_width->setValue(start.width);
    m_height->setValue(start.height);
    m_dpi->setValue(start.dpi);
    int chosen = int(figurePresets().size());  // custom unless a preset matches
    for (size_t i = 0; i < figurePresets().size(); ++i)
        if (figurePresets()[i].size == start) chosen = int(i);
    m_preset->setCurrentIndex(chosen);
    connect(m_preset, qOverload<int>(&QComboBox::activated), this, &FigureSizeDialog::choosePreset);
    for (QSpinBox* s : {m_width, m_height, m_dpi})
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
            // Editing a number makes it custom, unless it still is the preset's.
            int match = int(figurePresets().size());
            for (size_t i = 0; i < figurePresets().size(); ++i)
                if (figurePresets()[i].size == size()) match = int(i);
            m_preset->setCurrentIndex(match);
            showInches();
        });
    showInches();
}

FigureSize FigureSizeDialog::size() const {
    return {m_width->value(), m_height->value(), m_dpi->value()};
}

void FigureSizeDialog::choosePreset(int index) {
    m_preset->setCurrentIndex(index);
    if (index < 0 || index >= int(figurePresets().size())) return;  // custom: as they are
    const FigureSize s = figurePresets()[size_t(index)].size;
    m_width->setValue(s.width);
    m_height->setValue(s.height);
    m_dpi->setValue(s.dpi);
}

void FigureSizeDialog::showInches() {
    const FigureSize s = size();
    const double w = double(s.width) / s.dpi;
    m_inches->setText(
        s.height > 0 ? tr("%1 x %2 in").arg(w, 0, 'f', 2).arg(double(s.height) / s.dpi, 0, 'f', 2)
                     : tr("%1 in wide").arg(w, 0, 'f', 2));
}

}  // namespace qklab::gui
