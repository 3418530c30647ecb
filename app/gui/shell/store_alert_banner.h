// store_alert_banner.h — a bar above the views that says the run database could not be written.
//
// A store error during a live run used to show in the status bar for 15 seconds, or not at all:
// a class could train on while nothing was saved. The banner stays until it is dismissed, and
// keeps every alert raised since (newest first), so an error is seen even by someone who was
// away when it happened.
#pragma once

#include <QFrame>
#include <QStringList>

class QLabel;
class QPushButton;

namespace qklab::gui {

class StoreAlertBanner : public QFrame {
    Q_OBJECT
  public:
    explicit StoreAlertBanner(QWidget* parent = nullptr);

    // Shows the banner (again) with this alert on top.
    void raiseAlert(const QString& title, const QString& detail);
    QStringList alerts() const { return m_alerts; }

  signals:
    void dismissed();

  public slots:
    void dismiss();

  private:
    void refresh();

    QLabel* m_text;
    QPushButton* m_dismiss;
    QStringList m_alerts;  // "title: detail", newest first
};

}  // namespace qklab::gui
