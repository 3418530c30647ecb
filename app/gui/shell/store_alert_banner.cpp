// store_alert_banner.cpp — see store_alert_banner.h.
#include "shell/store_alert_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>

namespace qklab::gui {

namespace {
constexpr int kShownAlerts = 4;  // older ones are counted, not listed
}

StoreAlertBanner::StoreAlertBanner(QWidget* parent) : QFrame(parent) {
    setObjectName(QStringLiteral("storeAlert"));
    setFrameShape(QFrame::StyledPanel);
    // Fixed colours that read in both themes: an alarm must not blend into either.
    setStyleSheet(
        QStringLiteral("#storeAlert { background: #fde2e1; border: 2px solid #b3261e; }"
                       "#storeAlert QLabel { color: #5f1512; }"));
    auto* icon = new QLabel;
    icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(32, 32));
    m_text = new QLabel;
    m_text->setObjectName(QStringLiteral("storeAlertText"));
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_dismiss = new QPushButton(tr("Dismiss"));
    m_dismiss->setObjectName(QStringLiteral("storeAlertDismiss"));
    m_dismiss->setToolTip(tr("Hide this until the next database error"));
    auto* row = new QHBoxLayout(this);
    row->addWidget(icon, 0, Qt::AlignTop);
    row->addWidget(m_text, 1);
    row->addWidget(m_dismiss, 0, Qt::AlignTop);
    connect(m_dismiss, &QPushButton::clicked, this, &StoreAlertBanner::dismiss);
    hide();
}

void StoreAlertBanner::raiseAlert(const QString& title, const QString& detail) {
    m_alerts.prepend(title + QStringLiteral(": ") + detail);
    refresh();
    show();
}

void StoreAlertBanner::dismiss() {
    m_alerts.clear();
    hide();
    emit dismissed();
}

void StoreAlertBanner::refresh() {
    QStringList lines;
    for (int i = 0; i < m_alerts.size() && i < kShownAlerts; ++i)
        lines << m_alerts.at(i).toHtmlEscaped();
    QString html =
        QStringLiteral("<b>%1</b><br>%2")
            .arg(tr("The run database could not be written."), lines.join(QStringLiteral("<br>")));
    if (m_alerts.size() > kShownAlerts)
        html += QStringLiteral("<br><i>%1</i>")
                    .arg(tr("and %n earlier alert(s)", nullptr, m_alerts.size() - kShownAlerts));
    m_text->setText(html);
}

}  // namespace qklab::gui
