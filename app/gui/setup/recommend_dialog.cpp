// recommend_dialog.cpp — the guide's size table as a dialog.
#include "setup/recommend_dialog.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "qklab/config/recommend.h"

namespace qklab::gui {

RecommendDialog::RecommendDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Recommend settings"));
    auto* form = new QFormLayout;
    auto* bySize = new QRadioButton(tr("Parameters"));
    auto* byShape = new QRadioButton(tr("d_model × layers"));
    bySize->setChecked(true);
    m_by = new QButtonGroup(this);
    m_by->addButton(bySize, 0);
    m_by->addButton(byShape, 1);
    m_size = new QLineEdit(QStringLiteral("300M"));
    m_size->setToolTip(tr("e.g. 50M, 300M, 1.3B or 125e6"));
    m_dModel = new QSpinBox;
    m_dModel->setRange(16, 16384);
    m_dModel->setSingleStep(64);
    m_dModel->setValue(768);
    m_layers = new QSpinBox;
    m_layers->setRange(1, 256);
    m_layers->setValue(12);
    auto* shape = new QHBoxLayout;
    shape->addWidget(m_dModel);
    shape->addWidget(m_layers);
    form->addRow(bySize, m_size);
    form->addRow(byShape, shape);
    m_dHead = new QComboBox;
    m_dHead->addItem(tr("the guide's choice"), 0);
    for (int h : {32, 48, 64, 96, 128}) m_dHead->addItem(QString::number(h), h);
    form->addRow(tr("d_head"), m_dHead);
    m_precision = new QComboBox;
    m_precision->addItems({QStringLiteral("bf16"), QStringLiteral("fp32")});
    form->addRow(tr("Precision"), m_precision);
    m_ship = new QCheckBox(tr("must ship without QK-norm (anneal it away at the end)"));
    form->addRow(QString(), m_ship);
    m_preview = new QTextBrowser;
    m_preview->setMinimumSize(460, 220);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
    m_ok = buttons->addButton(tr("Fill the form"), QDialogButtonBox::AcceptRole);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_preview, 1);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_size, &QLineEdit::textChanged, this, &RecommendDialog::update);
    connect(m_dModel, &QSpinBox::valueChanged, this, &RecommendDialog::update);
    connect(m_layers, &QSpinBox::valueChanged, this, &RecommendDialog::update);
    connect(m_by, &QButtonGroup::idClicked, this, &RecommendDialog::update);
    connect(m_dHead, &QComboBox::currentIndexChanged, this, &RecommendDialog::update);
    connect(m_precision, &QComboBox::currentIndexChanged, this, &RecommendDialog::update);
    connect(m_ship, &QCheckBox::toggled, this, &RecommendDialog::update);
    update();
}

QString RecommendDialog::reasonsText() const {
    return m_preview->toPlainText();
}

// Recomputes the recommendation and its reasons on every change, so the user sees why.
void RecommendDialog::update() {
    const bool byShape = m_by->checkedId() == 1;
    m_size->setEnabled(!byShape);
    m_dModel->setEnabled(byShape);
    m_layers->setEnabled(byShape);
    RecommendRequest request;
    try {
        if (byShape) {
            request.dModel = m_dModel->value();
            request.nLayers = m_layers->value();
        } else {
            request.parameters = parseParameterCount(m_size->text().trimmed().toStdString());
        }
        request.dHead = m_dHead->currentData().toInt();
        request.precision = m_precision->currentText() == QStringLiteral("fp32") ? Precision::Fp32
                                                                                 : Precision::Bf16;
        request.shipWithoutQkNorm = m_ship->isChecked();
        const Recommendation r = recommendSettings(request);
        QString html = tr("<p><b>The guide's %1 row</b></p><ul>")
                           .arg(QString::fromStdString(r.tier).toHtmlEscaped());
        for (const auto& [key, reason] : r.reasons)
            html += QStringLiteral("<li><tt>%1</tt>: %2</li>")
                        .arg(QString::fromStdString(key).toHtmlEscaped(),
                             QString::fromStdString(reason).toHtmlEscaped());
        m_preview->setHtml(html + QStringLiteral("</ul>"));
        RunConfig c = r.config;
        c.why = recommendationToJson(r).value("why", "");
        m_config = c;
    } catch (const std::exception& e) {
        m_config.reset();
        m_preview->setHtml(QStringLiteral("<p style='color:#c0392b'>%1</p>")
                               .arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
    }
    m_ok->setEnabled(m_config.has_value());
}

}  // namespace qklab::gui
