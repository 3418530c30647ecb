// async_store.h — run a read against the SQLite store on a pool thread and hand the result to
// the GUI thread.
//
// Reading a 100k-step run (100k metric rows, ~100k probe rows, millions of histogram counts)
// takes longer than the 50 ms the GUI thread may be blocked. Each job opens its own RunStore
// connection (SQLite connections must not be shared across threads; WAL lets readers run
// next to the training writer) and the result is delivered through a queued call. A
// generation counter lets a panel drop the answer to a request it has since superseded.
#pragma once

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>
#include <exception>
#include <functional>
#include <memory>

#include "qklab/store/run_store.h"

namespace qklab::gui {

template <class T>
void readStoreAsync(QObject* receiver, const QString& dbPath, std::function<T(RunStore&)> job,
                    std::function<void(T)> done, std::function<void(QString)> fail = {}) {
    QPointer<QObject> guard(receiver);
    const std::string path = dbPath.toStdString();
    QThreadPool::globalInstance()->start([guard, path, job, done, fail] {
        auto result = std::make_shared<T>();
        QString error;
        try {
            RunStore store(path, StoreAccess::ReadOnly);  // readers never write
            *result = job(store);
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        } catch (...) {
            error = QStringLiteral("unknown error while reading the store");
        }
        // qApp lives as long as the program; the guard check runs on the GUI thread, where
        // the receiver is destroyed, so it cannot race with the receiver's destructor.
        QMetaObject::invokeMethod(
            qApp,
            [guard, done, fail, result, error] {
                if (!guard) return;
                if (error.isEmpty()) {
                    done(std::move(*result));
                } else if (fail) {
                    fail(error);
                }
            },
            Qt::QueuedConnection);
    });
}

}  // namespace qklab::gui
