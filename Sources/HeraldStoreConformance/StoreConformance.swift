import HeraldStore
import HeraldTestSupport

/// Every promise the store protocols make, each written once as a rule that any engine runs.
///
/// A rule takes an engine (`StoreEngine`), opens stores on fresh storage, and checks what the
/// protocols' documentation promises with swift-testing's `#expect` and `#require`, so it must
/// run inside a test. An engine's test target runs every rule, one test per rule:
///
/// ```swift
/// @Test func claimsAreExclusive() async throws {
///     try await StoreConformance.Rule.claimsAreExclusive.check(MyEngine())
/// }
/// ```
///
/// or all at once with `@Test(arguments: StoreConformance.Rule.allCases)`.
public enum StoreConformance {
    /// The rules, by name.
    public enum Rule: String, Sendable, CaseIterable, CustomStringConvertible {
        case claimsAreExclusive
        case leasesLapseAndComeBack
        case releaseClaimsOfARestartedOwner
        case callsFirstThenLongestWait
        case expiredAndTokenlessPushesAreFinished
        case voipToPushKitTokenOthersToMessagingToken
        case pushesRoundTrip
        case completionsFinishOrRetry
        case concurrentCompletionsKeepTheirOwn
        case deadTokensClearedOnlyWhereStillHeld
        case idempotencyRaces
        case burstsAnswerEachAsAlone
        case aTokenBelongsToOneDevice
        case appsDevicesAndPresence
        case retention
        case transcriptsAndDisconnects
        case outboxCountsAndNextDueTime
        case sealedSendersStaySealed
        case chatsStartEndAndIdle
        case endedChatsArePurged
        case claimsOnlyTheNetworksAsked
        case requeueTakesBackTheAttempt
        case importsAnotherStoresRecords
        case importsCallbacksCallsAndWebhookEvents
        case importsKeysAuditAndHeldMessages
        case liveSessionsAreLeased
        case recipientsCarryTheirLiveSession
        case liveHandoversAreAnsweredOnce
        case providerTokensCompareAndSet
        case providerTokenRacesHaveOneWinner
        case pushListingFilters
        case pushListingPagesWithoutGapsOrRepeats
        case webhookEventsAreQueued
        case webhookClaimsKeepOrderPerKey
        case webhookClaimersNeverShareAnEvent
        case webhookLapsedLeaseIsTakenOver
        case webhookEventsListAndExpire
        case webhookEventsByKey
        case pushesByConversation
        case queueCountsAgreeWithTheOutbox
        case appWebhookIsKept
        case pushFinalStatesWriteWebhookEvents
        case aPushKeepsItsTraceContext
        case chatDisconnectsWriteWebhookEvents
        case callIsWrittenWithItsIngest
        case callEndsOnce
        case callRingingIsReportedOnce
        case receiptsAreRecordedOncePerStage
        case deadlinesAreSettledOnce
        case dueCallsAreClaimedOnce
        case callStopsAreTakenOnce
        case fleetRoutesTravelWithTheToken
        case webPushKeysTravelWithTheClaim
        case callbacksAreClaimedOnceAndPushedOnce
        case callbackAnswersCompareAndSet
        case callbackPushedWhenDelivered
        case customerWaitOrdersTheQueue
        case nowOrNeverTravelsWithThePush
        case notificationPermissionChangesOnce
        case messagesKeepTheirPushOptions
        case ingestClaimsAreHeldByTheirNode
        case batchesOfOutcomesKeepTheirTimes
        case staleRecipientsAreRefused
        case lateOutcomesAfterALapsedLease
        case messagesToNobodyAreHeldOnce
        case heldMessagesEndAndAppsKeepTheirPolicy
        case apiKeysAndTheAuditLog
        case queuedMessagesAreCountedPerApp
        case changesAnswerEachInOneTransaction
        case relayChangesAnswerInOneBatch
        case storeWorkIsAppliedAlone
        case operatorsAndConsoleSessions
        case importsOperatorsButNoSessions
        case pushesBySubjectAndByID
        case pushActivityCountsFinishedPushesByMinute
        case pendingCallbacksAndRingingCalls

        public var description: String { rawValue }

        /// Runs the rule against `engine`.
        public func check(_ engine: some StoreEngine) async throws {
            switch self {
            case .claimsAreExclusive: try await StoreConformance.claimsAreExclusive(engine)
            case .leasesLapseAndComeBack: try await StoreConformance.leasesLapseAndComeBack(engine)
            case .releaseClaimsOfARestartedOwner: try await StoreConformance.releaseClaimsOfARestartedOwner(engine)
            case .callsFirstThenLongestWait: try await StoreConformance.callsFirstThenLongestWait(engine)
            case .expiredAndTokenlessPushesAreFinished:
                try await StoreConformance.expiredAndTokenlessPushesAreFinished(engine)
            case .voipToPushKitTokenOthersToMessagingToken:
                try await StoreConformance.voipToPushKitTokenOthersToMessagingToken(engine)
            case .pushesRoundTrip: try await StoreConformance.pushesRoundTrip(engine)
            case .completionsFinishOrRetry: try await StoreConformance.completionsFinishOrRetry(engine)
            case .concurrentCompletionsKeepTheirOwn:
                try await StoreConformance.concurrentCompletionsKeepTheirOwn(engine)
            case .batchesOfOutcomesKeepTheirTimes:
                try await StoreConformance.batchesOfOutcomesKeepTheirTimes(engine)
            case .staleRecipientsAreRefused: try await StoreConformance.staleRecipientsAreRefused(engine)
            case .lateOutcomesAfterALapsedLease: try await StoreConformance.lateOutcomesAfterALapsedLease(engine)
            case .messagesToNobodyAreHeldOnce: try await StoreConformance.messagesToNobodyAreHeldOnce(engine)
            case .heldMessagesEndAndAppsKeepTheirPolicy:
                try await StoreConformance.heldMessagesEndAndAppsKeepTheirPolicy(engine)
            case .apiKeysAndTheAuditLog: try await StoreConformance.apiKeysAndTheAuditLog(engine)
            case .queuedMessagesAreCountedPerApp: try await StoreConformance.queuedMessagesAreCountedPerApp(engine)
            case .changesAnswerEachInOneTransaction:
                try await StoreConformance.changesAnswerEachInOneTransaction(engine)
            case .relayChangesAnswerInOneBatch: try await StoreConformance.relayChangesAnswerInOneBatch(engine)
            case .storeWorkIsAppliedAlone: try await StoreConformance.storeWorkIsAppliedAlone(engine)
            case .operatorsAndConsoleSessions: try await StoreConformance.operatorsAndConsoleSessions(engine)
            case .importsOperatorsButNoSessions: try await StoreConformance.importsOperatorsButNoSessions(engine)
            case .pushesBySubjectAndByID: try await StoreConformance.pushesBySubjectAndByID(engine)
            case .pushActivityCountsFinishedPushesByMinute:
                try await StoreConformance.pushActivityCountsFinishedPushesByMinute(engine)
            case .pendingCallbacksAndRingingCalls: try await StoreConformance.pendingCallbacksAndRingingCalls(engine)
            case .deadTokensClearedOnlyWhereStillHeld:
                try await StoreConformance.deadTokensClearedOnlyWhereStillHeld(engine)
            case .idempotencyRaces: try await StoreConformance.idempotencyRaces(engine)
            case .burstsAnswerEachAsAlone: try await StoreConformance.burstsAnswerEachAsAlone(engine)
            case .aTokenBelongsToOneDevice: try await StoreConformance.aTokenBelongsToOneDevice(engine)
            case .appsDevicesAndPresence: try await StoreConformance.appsDevicesAndPresence(engine)
            case .retention: try await StoreConformance.retention(engine)
            case .transcriptsAndDisconnects: try await StoreConformance.transcriptsAndDisconnects(engine)
            case .outboxCountsAndNextDueTime: try await StoreConformance.outboxCountsAndNextDueTime(engine)
            case .sealedSendersStaySealed: try await StoreConformance.sealedSendersStaySealed(engine)
            case .chatsStartEndAndIdle: try await StoreConformance.chatsStartEndAndIdle(engine)
            case .endedChatsArePurged: try await StoreConformance.endedChatsArePurged(engine)
            case .claimsOnlyTheNetworksAsked: try await StoreConformance.claimsOnlyTheNetworksAsked(engine)
            case .requeueTakesBackTheAttempt: try await StoreConformance.requeueTakesBackTheAttempt(engine)
            case .importsAnotherStoresRecords: try await StoreConformance.importsAnotherStoresRecords(engine)
            case .importsCallbacksCallsAndWebhookEvents:
                try await StoreConformance.importsCallbacksCallsAndWebhookEvents(engine)
            case .importsKeysAuditAndHeldMessages: try await StoreConformance.importsKeysAuditAndHeldMessages(engine)
            case .liveSessionsAreLeased: try await StoreConformance.liveSessionsAreLeased(engine)
            case .recipientsCarryTheirLiveSession: try await StoreConformance.recipientsCarryTheirLiveSession(engine)
            case .liveHandoversAreAnsweredOnce: try await StoreConformance.liveHandoversAreAnsweredOnce(engine)
            case .providerTokensCompareAndSet: try await StoreConformance.providerTokensCompareAndSet(engine)
            case .providerTokenRacesHaveOneWinner: try await StoreConformance.providerTokenRacesHaveOneWinner(engine)
            case .pushListingFilters: try await StoreConformance.pushListingFilters(engine)
            case .pushListingPagesWithoutGapsOrRepeats:
                try await StoreConformance.pushListingPagesWithoutGapsOrRepeats(engine)
            case .webhookEventsAreQueued: try await StoreConformance.webhookEventsAreQueued(engine)
            case .webhookClaimsKeepOrderPerKey: try await StoreConformance.webhookClaimsKeepOrderPerKey(engine)
            case .webhookClaimersNeverShareAnEvent: try await StoreConformance.webhookClaimersNeverShareAnEvent(engine)
            case .webhookLapsedLeaseIsTakenOver: try await StoreConformance.webhookLapsedLeaseIsTakenOver(engine)
            case .webhookEventsListAndExpire: try await StoreConformance.webhookEventsListAndExpire(engine)
            case .webhookEventsByKey: try await StoreConformance.webhookEventsByKey(engine)
            case .pushesByConversation: try await StoreConformance.pushesByConversation(engine)
            case .queueCountsAgreeWithTheOutbox: try await StoreConformance.queueCountsAgreeWithTheOutbox(engine)
            case .appWebhookIsKept: try await StoreConformance.appWebhookIsKept(engine)
            case .chatDisconnectsWriteWebhookEvents:
                try await StoreConformance.chatDisconnectsWriteWebhookEvents(engine)
            case .pushFinalStatesWriteWebhookEvents:
                try await StoreConformance.pushFinalStatesWriteWebhookEvents(engine)
            case .aPushKeepsItsTraceContext: try await StoreConformance.aPushKeepsItsTraceContext(engine)
            case .callIsWrittenWithItsIngest: try await StoreConformance.callIsWrittenWithItsIngest(engine)
            case .callEndsOnce: try await StoreConformance.callEndsOnce(engine)
            case .callRingingIsReportedOnce: try await StoreConformance.callRingingIsReportedOnce(engine)
            case .receiptsAreRecordedOncePerStage: try await StoreConformance.receiptsAreRecordedOncePerStage(engine)
            case .deadlinesAreSettledOnce: try await StoreConformance.deadlinesAreSettledOnce(engine)
            case .dueCallsAreClaimedOnce: try await StoreConformance.dueCallsAreClaimedOnce(engine)
            case .callStopsAreTakenOnce: try await StoreConformance.callStopsAreTakenOnce(engine)
            case .fleetRoutesTravelWithTheToken: try await StoreConformance.fleetRoutesTravelWithTheToken(engine)
            case .webPushKeysTravelWithTheClaim: try await StoreConformance.webPushKeysTravelWithTheClaim(engine)
            case .callbacksAreClaimedOnceAndPushedOnce:
                try await StoreConformance.callbacksAreClaimedOnceAndPushedOnce(engine)
            case .callbackAnswersCompareAndSet: try await StoreConformance.callbackAnswersCompareAndSet(engine)
            case .callbackPushedWhenDelivered: try await StoreConformance.callbackPushedWhenDelivered(engine)
            case .customerWaitOrdersTheQueue: try await StoreConformance.customerWaitOrdersTheQueue(engine)
            case .nowOrNeverTravelsWithThePush: try await StoreConformance.nowOrNeverTravelsWithThePush(engine)
            case .notificationPermissionChangesOnce:
                try await StoreConformance.notificationPermissionChangesOnce(engine)
            case .messagesKeepTheirPushOptions: try await StoreConformance.messagesKeepTheirPushOptions(engine)
            case .ingestClaimsAreHeldByTheirNode: try await StoreConformance.ingestClaimsAreHeldByTheirNode(engine)
            }
        }
    }

    /// An event of the fixture app about one subject: keyed `<subject>:<id>` (the subject's events
    /// are delivered in order), with `{"<subject>_id": id}` for data.
    static func subjectEvent(
        _ id: String,
        _ type: WebhookEventType,
        subject: String,
        _ subjectID: String,
        at time: Int64
    ) -> WebhookEvent {
        WebhookEvent(
            id: id,
            appID: StoreFixtures.appID,
            type: type,
            orderingKey: subject + ":" + subjectID,
            data: #"{"\#(subject)_id":"\#(subjectID)"}"#,
            createdAt: time
        )
    }

    /// Saves an app with a webhook (its id returned) and alice's `devices` in it, beside `d1` of
    /// the fixture app, which has none.
    static func saveHookedApp(_ store: any HeraldStore, devices: [String]) async throws -> String {
        var hooked = AppRecord(id: "com.example.hooked", teamID: "TEAM123456")
        hooked.webhook = AppWebhook(url: "https://backend.example/hooks", sealedSecret: [9, 9, 9])
        try await store.saveApp(hooked)
        for id in devices {
            var device = StoreFixtures.device(id, user: "alice")
            device.appID = hooked.id
            try await store.saveDevice(device)
        }
        try await store.saveDevice(StoreFixtures.device("d1"))
        return hooked.id
    }

    /// Fresh storage holding the fixture app, and a store on it.
    static func fresh<Engine: StoreEngine>(
        _ engine: Engine
    ) async throws -> (store: any HeraldStore, storage: Engine.Storage) {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        try await store.saveApp(StoreFixtures.app())
        return (store, storage)
    }

    /// Claims every due push at `now` for `owner`, in the store's order.
    static func claimIDs(
        _ store: any HeraldStore,
        limit: Int = 100,
        owner: String = "w",
        now: Int64,
        leaseUntil: Int64? = nil
    ) async throws -> [String] {
        try await store.claim(limit: limit, owner: owner, now: now, leaseUntil: leaseUntil ?? now + 60_000)
            .map(\.entry.pushID)
    }
}
